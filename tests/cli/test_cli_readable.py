"""Issue 31 item 5: output and arguments people read and type — a schema/1 manifest given as a
plain path, ``history`` times in RFC 3339 and ``meta`` in ``history`` and ``context``, the
README's first session as it really prints, every ``--help`` line within 80 columns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import fgraph
from fgraph.cli.main import cli
from tests.support.cli import CliResult, run_cli
from tests.support.paths import REPO

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
README = REPO / "README.md"
CLOCK = {"FGRAPH_CLOCK": "1767225600000000", "FGRAPH_EVENT_SEED": "readable"}


def fg(cwd: Path, *args: str, stdin: str | None = None) -> CliResult:
    """``run_cli`` in ``cwd`` with this module's clock and seed."""
    return run_cli(*args, cwd=cwd, input=stdin, timeout=60, env=dict(os.environ, **CLOCK))


@pytest.fixture
def store(tmp_path):
    assert fg(tmp_path, "--db", "s.db", "add", '{"id":"ada","person/name":"Ada"}', "--by", "alice",
              "--meta", '{"ticket":7}').returncode == 0
    assert fg(tmp_path, "--db", "s.db", "add", '{"id":"ada","person/name":"Ada L"}', "--meta", "null").returncode == 0
    return tmp_path


# ----------------------------------------------------------------- schema-check / schema-apply SRC

def test_a_manifest_is_read_from_a_plain_path_as_from_at_path(store):
    manifest = fg(store, "--db", "s.db", "schema-export").stdout
    (store / "schema.json").write_text(manifest)
    plain = fg(store, "--db", "s.db", "schema-check", "schema.json", "--json")
    at = fg(store, "--db", "s.db", "schema-check", "@schema.json", "--json")
    inline = fg(store, "--db", "s.db", "schema-check", manifest, "--json")
    assert plain.returncode == 0 and plain.stdout == at.stdout == inline.stdout, plain.stderr
    assert json.loads(plain.stdout)["valid"] is True
    applied = fg(store, "--db", "s.db", "schema-apply", "schema.json", "--operation-id", "s1", "--json")
    assert applied.returncode == 0 and json.loads(applied.stdout)["status"] in ("applied", "already_applied")


@pytest.mark.parametrize("src, message, hint", [
    ("nope.json", "TypeError: SRC is neither valid JSON nor a file", "pass a file path, @file, inline JSON or - for stdin"),
    ('{"x":', "TypeError: SRC is neither valid JSON nor a file", "pass a file path, @file, inline JSON or - for stdin"),
    ("bad.json", "TypeError: SRC file bad.json is not valid JSON", "correct the JSON syntax"),
    ("@bad.json", "TypeError: SRC is not valid JSON", "correct the JSON syntax"),
    (".", "TypeError: SRC is neither valid JSON nor a file", "pass a file path"),  # a directory is no manifest
])
def test_what_is_neither_json_nor_a_file_says_how_to_pass_one(store, src, message, hint):
    (store / "bad.json").write_text("{\n")
    proc = fg(store, "--db", "s.db", "schema-check", src)
    assert proc.returncode == 1 and proc.stderr.startswith(message) and hint in proc.stderr, proc.stderr


def test_inline_json_wins_over_a_file_of_that_name(store):
    """What the published runtime reads as inline JSON stays inline: the answer to ``5`` is the
    manifest error even when a file named ``5`` exists."""
    (store / "5").write_text(fg(store, "--db", "s.db", "schema-export").stdout)
    proc = fg(store, "--db", "s.db", "schema-check", "5")
    assert proc.returncode == 1 and proc.stderr.startswith("SchemaError: schema manifest"), proc.stderr


# ----------------------------------------------------------------- history and context

def run_on_terminal(argv: list[str], cwd: Path, env: dict) -> tuple[int, str]:
    """What a person sees: the exit code and stdout on a pseudo-terminal (the terminal's line
    ends undone)."""
    import pty
    main, child = pty.openpty()
    with subprocess.Popen(argv, stdout=child, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=cwd,
                          env=env) as proc:
        os.close(child)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:   # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(timeout=60)
    os.close(main)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def on_terminal(cwd: Path, *args: str) -> str:
    code, out = run_on_terminal([FGRAPH, *args], cwd, dict(os.environ, **CLOCK))
    assert code == 0, out
    return out


def test_history_for_people_shows_rfc3339_times_and_meta_and_json_stays_published(store):
    people = json.loads(on_terminal(store, "--db", "s.db", "history", "ada"))
    piped = json.loads(fg(store, "--db", "s.db", "history", "ada").stdout)   # a pipe keeps the published bytes
    assert piped == [{key: value for key, value in fact.items() if "_time" not in key and "meta" not in key}
                     for fact in people]
    first, second = people
    assert first["at_time"] == "2026-01-01T00:00:01.000000Z" and first["meta"] == {"ticket": 7}
    assert first["rx_at_time"] == "2026-01-01T00:00:02.000000Z" and first["rx_meta"] is None
    assert second["meta"] is None and "rx_at_time" not in second
    machines = json.loads(fg(store, "--db", "s.db", "history", "ada", "--json").stdout)
    assert [set(fact) for fact in machines] == [
        {"a", "at", "by", "e", "id", "rx", "rx_at", "tx", "v"}, {"a", "at", "e", "id", "rx", "tx", "v"}]
    assert machines == [{key: value for key, value in fact.items() if "_time" not in key and "meta" not in key}
                        for fact in people]


def test_history_details_in_the_library(tmp_path):
    with fgraph.connect(str(tmp_path / "l.db")) as db:
        db.transact({"id": "x", "k/v": 1}, meta=[1])
        db.transact({"id": "x", "k/w": 2})
        plain, detailed = db.history("x"), db.history("x", details=True)
    assert [set(fact) for fact in plain] == [{"a", "at", "e", "id", "rx", "tx", "v"}] * 2
    assert detailed[0]["meta"] == [1] and "meta" not in detailed[1]
    assert all(fact["at_time"].endswith("Z") for fact in detailed)


def test_context_shows_meta_as_tx_does(store):
    text = fg(store, "--db", "s.db", "context", "--by", "change").stdout
    assert '## tx 67 at 2026-01-01T00:00:01.000000Z by alice meta {"ticket":7}' in text
    assert "## tx 68 at 2026-01-01T00:00:02.000000Z meta null" in text
    groups = json.loads(fg(store, "--db", "s.db", "context", "--by", "change", "--format", "json").stdout)["transactions"]
    assert [group.get("meta", "absent") for group in groups] == [None, {"ticket": 7}]
    receipt = json.loads(fg(store, "--db", "s.db", "tx", "67", "--json").stdout)
    assert receipt["meta"] == groups[1]["meta"]


# ----------------------------------------------------------------- the README and --help

def readme_session() -> list[tuple[str, list[str]]]:
    """(command, lines shown after it) of the README's first session."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## A first session\n\n```sh\n(.*?)```", text, re.S).group(1)
    pairs = []
    for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
        command, _, shown = chunk.partition("\n")
        pairs.append((command, shown.rstrip("\n").split("\n") if shown.strip() else []))
    return pairs


def test_the_readme_first_session_shows_real_output(tmp_path):
    """Every line the README shows after a command is printed by it, in that order; a line with
    "…" stands for lines left out. The first add shows its receipt."""
    session = readme_session()
    assert len(session) >= 6 and session[0][1][:2] == ["{", '  "asserted": [']
    env = dict(os.environ, PATH=os.path.dirname(FGRAPH) + os.pathsep + os.environ.get("PATH", ""), **CLOCK)
    for command, shown in session:
        code, out = run_on_terminal(["bash", "-c", command], tmp_path, env)   # a person types it
        assert code == 0, (command, out)
        printed = iter(out.split("\n"))
        for line in shown:
            if "…" in line:
                continue
            assert any(printed_line == line for printed_line in printed), (command, line, out)


def test_every_help_line_fits_80_columns():
    for argv in [[]] + [[name] for name in sorted(cli.commands)]:
        result = CliRunner().invoke(cli, [*argv, "--help"], terminal_width=80)
        assert result.exit_code == 0, argv
        for line in result.output.split("\n"):
            assert len(line) <= 80, (argv, line)
