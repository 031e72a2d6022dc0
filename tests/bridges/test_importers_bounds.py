"""Proves issue 48 item 4 for the files a command reads: an import, a stream, a snapshot, a data or
query file, a collected stream and a physical backup named as a FIFO, a device or a directory are
refused at once with a typed error (a FIFO used to block the command for ever, `/dev/zero` used to
be read for ever by `import` and `review`), while stdin ('-') and a regular file still work; a
line is bounded (an oversized line of an import is one bad line, skipped in bounded memory)."""

from __future__ import annotations

import json
import os

import pytest

from tests.support.cli import run_cli

KINDS = ("fifo", "directory", "/dev/zero", "link-to-fifo")
COMMANDS = {
    "import mcp-memory": ("import", "mcp-memory", "{path}"),
    "import jsonl-log": ("import", "jsonl-log", "{path}"),
    "apply": ("apply", "{path}"),
    "review": ("review", "{path}"),
    "review --digest": ("review", "{path}", "--digest"),
    "render": ("render", "{path}"),
    "verify": ("verify", "{path}"),
    "verify-stream": ("verify-stream", "{path}", "--chain", "{events}"),
    "add @file": ("add", "@{path}"),
    "q @file": ("q", "@{path}"),
    "restore": ("restore", "{path}"),
    "restore-backup": ("restore-backup", "{path}", "{fresh}"),
}


@pytest.fixture
def place(tmp_path):
    store = tmp_path / "store.db"
    run_cli("add", '{"id":"ada","person/name":"Ada"}', db=store, check=True)
    (tmp_path / "events.ndjson").write_text(run_cli("tail", db=store, check=True).stdout)
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "fifo", tmp_path / "link-to-fifo")
    (tmp_path / "directory").mkdir()
    return tmp_path, store


def _args(command: str, path: str, tmp_path) -> list[str]:
    return [part.format(path=path, events=tmp_path / "events.ndjson", fresh=tmp_path / "fresh.db")
            for part in COMMANDS[command]]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_input_that_is_not_a_regular_file_is_refused_at_once(place, command, kind):
    tmp_path, store = place
    path = kind if kind.startswith("/") else str(tmp_path / kind)
    db = tmp_path / "new.db" if command == "restore" else store
    result = run_cli(*_args(command, path, tmp_path), db=db, timeout=30)   # it used to block here (FIFO)
    assert result.returncode == 1 and result.stdout == "", result
    assert result.stderr.startswith("FormatError: "), result.stderr
    assert "not a regular file" in result.stderr and repr(path) in result.stderr, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "fresh.db")


def test_stdin_and_a_regular_file_are_still_read(place):
    tmp_path, store = place
    events = (tmp_path / "events.ndjson").read_text()
    replica = tmp_path / "replica.db"
    assert json.loads(run_cli("apply", "-", db=replica, json=True, input=events, check=True).stdout)["applied"] == 1
    other = tmp_path / "other.db"
    assert json.loads(run_cli("apply", str(tmp_path / "events.ndjson"), db=other, json=True,
                              check=True).stdout)["applied"] == 1
    memory = tmp_path / "memory.jsonl"
    memory.write_text(json.dumps({"type": "entity", "name": "Ada", "entityType": "person",
                                  "observations": ["wrote the first program"]}) + "\n")
    for source, stdin in ((str(memory), None), ("-", memory.read_text())):
        result = run_cli("import", "mcp-memory", source, db=tmp_path / "imported.db", json=True, input=stdin)
        assert result.returncode == 0, result.stderr


def test_an_oversized_import_line_is_one_bad_line_read_in_bounded_memory(place):
    tmp_path, _ = place
    log = tmp_path / "big.jsonl"
    with open(log, "wb") as handle:       # 40 MiB of one line, more than any record may hold, then a good one
        handle.write(b'{"x":"' + b"a" * (40 << 20) + b'"}\n')
        handle.write(json.dumps({"type": "entity", "name": "Ada", "entityType": "person", "observations": []}).encode()
                     + b"\n")
    result = run_cli("import", "mcp-memory", str(log), db=tmp_path / "imported.db", json=True, timeout=120,
                     preexec_fn=_limit_memory)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr and "MemoryError" not in result.stderr
    assert "over" in (result.stdout + result.stderr), (result.stdout[-400:], result.stderr[-400:])


def _limit_memory() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))   # far less than many copies of the 40 MiB line
