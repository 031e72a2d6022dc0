"""Proves the reviewed-stream commands on real files (issue 35): `review` (Markdown and --json,
nothing written), `render` as a git textconv driver under a real `git diff`, `review --digest`
with `apply --expect-digest`, `tail --chain` (also following, and continued) with
`verify-stream`; and that every single-byte change of a reviewed stream is refused by both."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import blake3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.cli import FGRAPH, clean_env, interruptible, invoke_cli, run_clean


def build(cwd: Path, name: str, born: int = 1815) -> Path:
    """A store of three transactions (deterministic: the same calls give the same events)."""
    db = cwd / name
    for data in ('{"id":"ada","person/name":"Ada","person/born":%d}' % born, '{"id":"bob","person/name":"Bob"}',
                 '{"id":"ada","person/seen":{"instant":"2026-02-01T00:00:00Z"}}'):
        assert run_clean(["--db", db, "add", data, "--by", "alice", "--source", "notes.md"], cwd).returncode == 0
    return db


def tail(cwd: Path, db: Path, *extra) -> bytes:
    proc = run_clean(["--db", db, "tail", "--since", "64", *extra], cwd)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def latest_tx(cwd: Path, db: Path) -> int:
    return json.loads(run_clean(["--db", db, "info", "--json"], cwd).stdout)["latest_tx"]


def test_review_reports_in_markdown_and_json_and_writes_nothing(tmp_path):
    (tmp_path / "s.events.ndjson").write_bytes(tail(tmp_path, build(tmp_path, "a.db")))
    rx = tmp_path / "rx.db"
    assert run_clean(["--db", rx, "add", '{"id":"ada","person/born":1700}'], tmp_path, FGRAPH_EVENT_SEED="rx").returncode == 0
    before = latest_tx(tmp_path, rx)
    proc = run_clean(["review", "s.events.ndjson", "--against", rx], tmp_path, FGRAPH_EVENT_SEED="rx")
    text = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    assert text.startswith("# Review of s.events.ndjson") and "**apply would accept the stream**" in text
    assert "- assert person/born = 1815 — replaces the receiver's 1700" in text
    assert "by alice · source notes.md" in text and "### bob" in text
    report = json.loads(run_clean(["--db", rx, "review", "s.events.ndjson", "--json"], tmp_path).stdout)
    assert report["would_apply"] and report["counts"]["new"] == 3 and report["counts"]["replaced"] == 1
    assert latest_tx(tmp_path, rx) == before
    missing = run_clean(["--db", tmp_path / "nobody.db", "review", "s.events.ndjson"], tmp_path)
    assert missing.returncode == 1 and missing.stderr.startswith(b"NotFound: ") and b"fgraph init" in missing.stderr
    assert not (tmp_path / "nobody.db").exists()


def test_review_exits_1_and_names_the_lines_apply_would_refuse(tmp_path):
    good = tail(tmp_path, build(tmp_path, "a.db")).splitlines(keepends=True)
    (tmp_path / "bad.ndjson").write_bytes(good[0] + b'{"fgraph":"event/1"}\n' + good[1])
    assert run_clean(["--db", "rx.db", "init"], tmp_path).returncode == 0
    proc = run_clean(["--db", "rx.db", "review", "bad.ndjson"], tmp_path)
    assert proc.returncode == 1
    assert "**apply would refuse the whole stream**" in proc.stdout.decode()
    assert "- line 2: TypeError: line 2: missing fields" in proc.stdout.decode()


def test_render_is_a_git_textconv_driver(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    git_env = {**clean_env(), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "GIT_AUTHOR_NAME": "t",
               "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}

    def git(*args) -> str:
        proc = subprocess.run(["git", *args], cwd=repo, env=git_env, capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode()

    git("init", "-q")
    (repo / ".gitattributes").write_text("*.events.ndjson diff=fgraph\n")   # docs/streams.md
    git("config", "diff.fgraph.textconv", f"{FGRAPH} render")
    stream = repo / "memory.events.ndjson"
    stream.write_bytes(tail(tmp_path, build(tmp_path, "v1.db", born=1815)))
    git("add", ".")
    git("commit", "-q", "-m", "v1")
    stream.write_bytes(tail(tmp_path, build(tmp_path, "v2.db", born=1816)))
    raw = git("diff", "--no-textconv", "--", "memory.events.ndjson")
    assert [line for line in raw.splitlines() if line.startswith("+{")]   # unreadable: the whole event line
    readable = git("diff", "--", "memory.events.ndjson")
    changed = [line for line in readable.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["-  assert ada person/born = 1815", "+  assert ada person/born = 1816"]
    assert "@@" in readable and "  assert ada person/name = \"Ada\"" in readable   # the context is facts too
    assert run_clean(["render", "-"], tmp_path, input=stream.read_bytes()).stdout == \
        run_clean(["render", stream], tmp_path).stdout


def test_apply_expect_digest_applies_the_reviewed_bytes_and_refuses_others(tmp_path):
    data = tail(tmp_path, build(tmp_path, "a.db"))
    (tmp_path / "s.ndjson").write_bytes(data)
    digest = run_clean(["review", "--digest", "s.ndjson"], tmp_path).stdout.decode().strip()
    assert digest == "blake3:" + blake3.blake3(data).hexdigest()
    assert run_clean(["--db", "rx.db", "init"], tmp_path).returncode == 0
    (tmp_path / "s.ndjson").write_bytes(data.replace(b"1815", b"1816"))
    refused = run_clean(["--db", "rx.db", "apply", "s.ndjson", "--expect-digest", digest], tmp_path)
    assert refused.returncode == 1 and refused.stderr.startswith(b"Conflict: the stream's bytes have digest")
    assert b"nothing was applied" in refused.stderr and latest_tx(tmp_path, tmp_path / "rx.db") == 64
    (tmp_path / "s.ndjson").write_bytes(data)
    applied = run_clean(["--db", "rx.db", "apply", "-", "--expect-digest", digest], tmp_path, input=data)
    assert applied.returncode == 0 and json.loads(applied.stdout)["applied"] == 3
    malformed = run_clean(["--db", "rx.db", "apply", "s.ndjson", "--expect-digest", "sha256:00"], tmp_path)
    assert malformed.returncode == 1 and malformed.stderr.startswith(b"TypeError: digest 'sha256:00'")


def test_tail_chain_keeps_the_bytes_and_verify_stream_finds_tampering(tmp_path):
    db = build(tmp_path, "a.db")
    plain = tail(tmp_path, db)
    assert tail(tmp_path, db, "--chain", "s.chain") == plain   # the event/1 bytes are untouched
    (tmp_path / "s.ndjson").write_bytes(plain)
    ok = run_clean(["verify-stream", "s.ndjson", "--chain", "s.chain", "--json"], tmp_path)
    assert ok.returncode == 0 and json.loads(ok.stdout)["intact"] and json.loads(ok.stdout)["chained"] == 3
    lines = plain.splitlines(keepends=True)
    for tampered, kind, line in ((lines[:2], "truncated", 3), ([lines[1], lines[0], lines[2]], "moved", 1),
                                 ([lines[0], lines[1].replace(b"Bob", b"Rob"), lines[2]], "edited", 2)):
        (tmp_path / "t.ndjson").write_bytes(b"".join(tampered))
        proc = run_clean(["verify-stream", "t.ndjson", "--chain", "s.chain", "--json"], tmp_path)
        found = json.loads(proc.stdout)
        assert proc.returncode == 1 and not found["intact"]
        assert (found["problems"][0]["kind"], found["problems"][0]["line"]) == (kind, line)


def test_tail_follow_chain_continues_an_existing_chain(tmp_path):
    db = build(tmp_path, "a.db")
    first = tail(tmp_path, db, "--chain", "s.chain")
    (tmp_path / "s.ndjson").write_bytes(first)
    since = str(latest_tx(tmp_path, db))
    with open(tmp_path / "s.ndjson", "ab") as out:
        proc = subprocess.Popen([FGRAPH, "--db", str(db), "tail", "--follow", "--since", since, "--chain", "s.chain"],
                                cwd=tmp_path, env=clean_env(), stdout=out, stderr=subprocess.PIPE,
                                preexec_fn=interruptible)
        try:
            for name in ("carol", "dan"):
                assert run_clean(["--db", db, "add", '{"id":"%s","person/name":"x"}' % name], tmp_path).returncode == 0
            deadline = time.monotonic() + 30
            while (tmp_path / "s.chain").read_bytes().count(b"\n") < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise
    assert proc.returncode == 130, err   # Ctrl-C ends a follow as an interrupt, with nothing on stderr
    assert err == b""
    assert (tmp_path / "s.ndjson").read_bytes() == tail(tmp_path, db)
    result = json.loads(run_clean(["verify-stream", "s.ndjson", "--chain", "s.chain", "--json"], tmp_path).stdout)
    assert result["intact"] and result["chained"] == 5 and result["lines"] == 5


# -- every single-byte change is refused by the digest and by the chain ----------------------------
@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("reviewed")
    data = tail(cwd, build(cwd, "a.db"))
    (cwd / "s.ndjson").write_bytes(data)
    assert tail(cwd, cwd / "a.db", "--chain", "s.chain") == data
    digest = run_clean(["review", "--digest", "s.ndjson"], cwd).stdout.decode().strip()
    assert run_clean(["--db", "rx.db", "init"], cwd).returncode == 0
    return cwd, data, digest


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_every_single_byte_change_is_refused_by_the_digest_and_the_chain(reviewed, data):
    cwd, original, digest = reviewed
    position = data.draw(st.integers(0, len(original) - 1), label="position")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != original[position]), label="byte")
    changed = original[:position] + bytes([byte]) + original[position + 1:]
    target = cwd / "changed.ndjson"
    target.write_bytes(changed)
    code, _, err = invoke_cli(["--db", cwd / "rx.db", "apply", target, "--expect-digest", digest])
    assert code == 1 and err.startswith(("Conflict: ", "TypeError: ", "FormatError: ", "SchemaError: "))
    assert invoke_cli(["--db", cwd / "rx.db", "info", "--json"])[1].count('"latest_tx":64') == 1   # nothing written
    code, out, _ = invoke_cli(["verify-stream", target, "--chain", cwd / "s.chain", "--json"])
    assert code == 1 and json.loads(out)["intact"] is False


@pytest.mark.peer
def test_tail_with_a_chain_prints_the_published_runtimes_bytes(tmp_path):
    """The chain is a file beside the stream: what `tail --chain` prints is byte for byte what the
    published runtime's `tail` prints for the same store (and the chain verifies it)."""
    from tests.support.peerlib import peer_executable
    from tests.support.peerlib import our_executable, peer, run_cli
    if peer_executable() is None:
        pytest.skip("FGRAPH_PEER is not set")
    store = tmp_path / "s.db"
    run_cli(our_executable(), store, "add", '{"id":"ada","person/born":1815}')
    run_cli(our_executable(), store, "add", '{"id":"ada","person/born":1816,"note/text":"caf\u00e9"}')
    ours = run_cli(our_executable(), store, "tail", "--since", "64", "--chain", str(tmp_path / "s.chain"))
    assert ours == peer(store, "tail", "--since", "64") and ours.count(b"\n") == 2
    (tmp_path / "s.ndjson").write_bytes(ours)
    verdict = json.loads(run_cli(our_executable(), store, "--json", "verify-stream", str(tmp_path / "s.ndjson"),
                                 "--chain", str(tmp_path / "s.chain")))
    assert verdict["intact"] is True
