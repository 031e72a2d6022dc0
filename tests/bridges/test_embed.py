"""``fgraph search --embed-cmd`` (spec 13 §10): the embedder's contract, every failure a
TypeError, run on our CLI and, when FGRAPH_PEER is set, on the published one with the same
outcome (a hanging embedder is checked on ours only, with a short FGRAPH_EMBED_TIMEOUT)."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from tests.support.cli import run_cli
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED

from tests.support.peerlib import peer_executable
from tests.support.peerlib import our_executable

ENV = {"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": CONFORMANCE_SEED}

# The spec's example embedder: counts of code points by ord(ch) % 4, after recording what it got.
COUNTING = """import json, sys
data = sys.stdin.buffer.read()
open(sys.argv[1] if len(sys.argv) > 1 else "got.json", "w").write(json.dumps([sys.argv[2:], data.decode()]))
counts = [0, 0, 0, 0]
for ch in data.decode():
    counts[ord(ch) % 4] += 1
print(json.dumps(counts))
"""

BEHAVIOURS = {
    "fails": "import sys; sys.stdin.read(); sys.exit(3)",
    "two-arrays": "print('[1,0,0,0] [1,0,0,0]')",
    "not-json": "print('one two')",
    "empty-array": "print('[]')",
    "object": "print('{\"vector\": [1, 0, 0, 0]}')",
    "string-element": "print('[1, \"2\", 0, 0]')",
    "bool-element": "print('[1, true, 0, 0]')",
    "nan": "print('[1, NaN, 0, 0]')",
    "too-big": "import sys; sys.stdout.write('[' + ' ' * 1048576 + '1,0,0,0]')",
    "just-fits": "import sys; body = '1,0,0,0]'; sys.stdout.write('[' + ' ' * (1048576 - 1 - len(body)) + body)",
    "wrong-dims": "print('[1, 0, 0]')",
    "zeros": "print('[0, 0, 0, 0]')",
    "spaced": "print('\\n [ 1 , 0 ,\\t0, 0 ]\\n\\n')",
    "ignores-stdin": "print('[0, 0, 1, 0]')",
}


def _script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(0o755)
    return str(path)


def _run(executable: str, cwd, *args: str, **extra_env) -> tuple:
    env = dict(os.environ, **ENV, **extra_env)
    code, out, err = run_cli(*args, db="e.db", cwd=cwd, env=env, text=False, executable=executable)
    if code == 0:
        return ("ok", json.loads(out))
    first = err.decode("utf-8", "replace").split("\n", 1)[0]
    return ("error", code, first.partition(":")[0])


def _runtimes():
    found = [("ours", our_executable())]
    if peer_executable():
        found.append(("peer", peer_executable()))
    return found


@pytest.fixture(params=[name for name, _ in _runtimes()])
def runtime(request, tmp_path):
    executable = dict(_runtimes())[request.param]
    for args in (["declare", "note/embedding", "--type", "vector", "--dims", "4"],
                 ["add", json.dumps([{"id": "n1", "note/text": "hello world", "note/embedding": {"vector": [3, 3, 3, 2]}},
                                     {"id": "n2", "note/text": "other thing", "note/embedding": {"vector": [0, 0, 1, 0]}}])]):
        assert _run(executable, tmp_path, *args)[0] == "ok"
    return executable


def test_the_spec_example_embeds_the_text_and_finds_n1(runtime, tmp_path):
    embedder = _script(tmp_path, "embed", COUNTING)
    outcome = _run(runtime, tmp_path, "--json", "search", "--text", "hello world", "--k", "1",
                   "--embed-cmd", json.dumps([embedder, str(tmp_path / "got.json"), "--x", "y z"]),
                   "--vector-attribute", "note/embedding")
    assert outcome[0] == "ok", outcome
    result = outcome[1]
    assert result["work_used"] == 3 and [h["entity"] for h in result["hits"]] == ["n1"]
    assert result["hits"][0]["score"] == 0.03278688524590164
    argv, stdin = json.loads((tmp_path / "got.json").read_text())
    assert argv == ["--x", "y z"] and stdin == "hello world"  # argv passed through, text without a newline


@pytest.mark.parametrize("behaviour", sorted(BEHAVIOURS))
def test_embedder_output_rules(runtime, tmp_path, behaviour):
    embedder = _script(tmp_path, behaviour, BEHAVIOURS[behaviour])
    outcome = _run(runtime, tmp_path, "--json", "search", "--text", "hello world", "--embed-cmd", embedder,
                   "--vector-attribute", "note/embedding")
    if behaviour in ("just-fits", "spaced", "ignores-stdin"):
        assert outcome[0] == "ok" and outcome[1]["hits"], outcome
    else:
        assert outcome == ("error", 1, "TypeError")


@pytest.mark.parametrize("command", ["", "[]", "[1]", '["x", 5]', '[""]', "[not json", "/no/such/embedder",
                                     "no-such-embedder-on-path", '["/no/such/embedder"]'])
def test_commands_that_cannot_run_are_type_errors(runtime, tmp_path, command):
    outcome = _run(runtime, tmp_path, "--json", "search", "--text", "hello", "--embed-cmd", command,
                   "--vector-attribute", "note/embedding")
    assert outcome == ("error", 1, "TypeError")


def test_a_path_with_spaces_is_one_executable_never_split(runtime, tmp_path):
    folder = tmp_path / "my tools"
    folder.mkdir()
    embedder = _script(folder, "embed", "print('[3, 3, 3, 2]')")
    outcome = _run(runtime, tmp_path, "--json", "search", "--text", "hello", "--embed-cmd", embedder,
                   "--vector-attribute", "note/embedding", "--k", "1")
    assert outcome[0] == "ok" and outcome[1]["hits"][0]["entity"] == "n1"
    split_me = _run(runtime, tmp_path, "--json", "search", "--text", "hello", "--embed-cmd", f"{embedder} --flag",
                    "--vector-attribute", "note/embedding")
    assert split_me == ("error", 1, "TypeError")


def test_the_embedder_is_not_started_without_text_or_with_a_vector(runtime, tmp_path):
    marker = tmp_path / "started"
    embedder = _script(tmp_path, "marker", f"open({str(marker)!r}, 'w').write('x'); print('[1,0,0,0]')")
    explicit = _run(runtime, tmp_path, "--json", "search", "--text", "hello", "--vector", "[0, 0, 1, 0]",
                    "--embed-cmd", embedder, "--vector-attribute", "note/embedding", "--k", "1")
    assert explicit[0] == "ok" and [m["a"] for m in explicit[1]["hits"][0]["matched"]]
    blank = _run(runtime, tmp_path, "--json", "search", "--text", "   ", "--embed-cmd", embedder,
                 "--vector-attribute", "note/embedding")
    assert blank == ("error", 1, "TypeError")
    assert not marker.exists()


def test_vector_attribute_is_still_required_after_the_run(runtime, tmp_path):
    marker = tmp_path / "started"
    embedder = _script(tmp_path, "marker", f"open({str(marker)!r}, 'w').write('x'); print('[1,0,0,0]')")
    outcome = _run(runtime, tmp_path, "--json", "search", "--text", "hello", "--embed-cmd", embedder)
    assert outcome == ("error", 1, "TypeError") and marker.exists()


def test_a_hanging_embedder_is_stopped_at_the_timeout(tmp_path):
    executable = our_executable()
    assert _run(executable, tmp_path, "declare", "note/embedding", "--type", "vector", "--dims", "4")[0] == "ok"
    embedder = _script(tmp_path, "hang", "import time; time.sleep(60)")
    start = time.monotonic()
    outcome = _run(executable, tmp_path, "--json", "search", "--text", "hello", "--embed-cmd", embedder,
                   "--vector-attribute", "note/embedding", FGRAPH_EMBED_TIMEOUT="1")
    assert outcome == ("error", 1, "TypeError") and time.monotonic() - start < 30
