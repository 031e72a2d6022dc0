"""Proves that `tail` resumes exactly (issue 49 item 1, decision S1): `--after EVENT_UUID` after any
event (local, applied, redacted), `--cursor FILE` recorded only after the line reached the output
and safe as a sidecar, and `--chain` continued after a crash without duplicating, skipping or
breaking `verify-stream`; the bytes a killed run left after its record are adopted or cut."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from fgraph.core.canonical import loads
from tests.support.cli import CliResult, run_cli
from tests.support.collectors import (expected, kill9, lines_of, mixed_store, start, tail_appending,
                                      wait_until_lines)
from tests.support.torture import FGRAPH, wait_for


@pytest.fixture
def mixed(tmp_path):
    db = tmp_path / "agent.db"
    return db, [line.encode() + b"\n" for line in mixed_store(db, tmp_path)]


def tail(db, *args, stdout=None):
    """`fgraph --db DB tail ARGS`, its stdout captured, or appended to the file ``stdout``."""
    if stdout is None:
        return run_cli("tail", *args, db=db, text=False, timeout=60)
    code, err = tail_appending(db, args, stdout)
    return CliResult(code, b"", err)


def event(line: bytes) -> str:
    return loads(line)["event"]


def test_after_an_event_is_exact_for_local_applied_and_redacted_events(mixed):
    db, lines = mixed
    instants = [loads(line)["at"] for line in lines]
    assert instants != sorted(instants)   # applied events keep their source's time: `at` cannot place a resume
    assert any(loads(line).get("redacted") for line in lines)
    for i, line in enumerate(lines):
        code, out, err = tail(db, "--after", event(line))
        assert (code, out, err) == (0, b"".join(lines[i + 1:]), b""), (i, err)


def test_an_unknown_or_malformed_event_is_refused_with_its_name(mixed):
    db, _ = mixed
    code, out, err = tail(db, "--after", "01eb0e5e-0d81-4a0a-9747-d7a8570bc521")
    assert code == 1 and out == b""
    assert err.startswith(b"NotFound: event 01eb0e5e-0d81-4a0a-9747-d7a8570bc521 is not in this store") and b"; " in err
    code, _, err = tail(db, "--after", "120")
    assert code == 1 and err.startswith(b"TypeError: --after event '120' is not a canonical UUID")
    code, _, err = tail(db, "--after", event(mixed[1][0]), "--since", "70")
    assert code == 2 and b"--since or --after" in err


def test_a_cursor_resumes_after_what_it_recorded(mixed, tmp_path):
    db, lines = mixed
    cursor, out = tmp_path / "audit.cursor", tmp_path / "audit.ndjson"
    assert tail(db, "--after", event(lines[2]), "--cursor", cursor, stdout=out).returncode == 0
    assert lines_of(out) == lines[3:]   # a missing cursor: from --after
    recorded = json.loads(cursor.read_bytes())
    assert recorded["event"] == event(lines[-1]) and recorded["fgraph"] == "tail-cursor/1"
    assert recorded["output"]["size"] == out.stat().st_size
    assert run_cli("add", '{"id":"dee","person/name":"Dee"}', db=db).returncode == 0
    assert tail(db, "--cursor", cursor, stdout=out).returncode == 0
    assert out.read_bytes() == b"".join(lines[3:]) + expected(db).splitlines(keepends=True)[-1]
    code, piped, _ = tail(db, "--cursor", cursor)   # stdout a pipe: nothing new, nothing repeated
    assert (code, piped) == (0, b"")


def test_lines_a_killed_run_left_after_its_record_are_adopted_or_cut(mixed, tmp_path):
    db, lines = mixed
    cursor, out = tmp_path / "audit.cursor", tmp_path / "audit.ndjson"
    assert tail(db, "--cursor", cursor, stdout=out).returncode == 0
    kept = cursor.read_bytes()
    for name in ("eve", "fay"):
        assert run_cli("add", json.dumps({"id": name, "person/name": name}), db=db).returncode == 0
    whole = expected(db).splitlines(keepends=True)
    with open(out, "ab") as handle:   # killed after a line and part of the next, before the cursor was replaced
        handle.write(whole[-2] + whole[-1][:25])
    assert tail(db, "--cursor", cursor, stdout=out).returncode == 0
    assert out.read_bytes() == b"".join(whole) and cursor.read_bytes() != kept
    with open(out, "ab") as handle:
        handle.write(b'{"not":"ours"}\n')
    size = out.stat().st_size - len(b'{"not":"ours"}\n')
    result = tail(db, "--cursor", cursor, stdout=out)
    assert result.returncode == 1
    assert f"truncate -s {size} FILE".encode() in result.stderr and result.stderr.startswith(b"Conflict: ")


def test_a_damaged_foreign_or_unsafe_cursor_is_refused(mixed, tmp_path):
    db, _ = mixed
    cursor = tmp_path / "c"
    cursor.write_bytes(b"{not json")
    code, out, err = tail(db, "--cursor", cursor)
    assert code == 1 and out == b"" and err.startswith(b"FormatError: the cursor file") and b"--after" in err
    other = tmp_path / "other.db"
    assert run_cli("add", '{"id":"ada"}', db=other).returncode == 0   # created by the real clock: another genesis
    assert tail(other, "--cursor", tmp_path / "o.cursor").returncode == 0
    code, _, err = tail(db, "--cursor", tmp_path / "o.cursor")
    assert code == 1 and err.startswith(b"Conflict: the cursor file") and b"another store" in err
    os.symlink(tmp_path / "o.cursor", tmp_path / "link.cursor")
    assert tail(db, "--cursor", tmp_path / "link.cursor").stderr.startswith(b"Conflict: ")
    os.mkfifo(tmp_path / "fifo.cursor")
    assert tail(db, "--cursor", tmp_path / "fifo.cursor").stderr.startswith(b"Conflict: ")
    code, _, err = tail(db, "--cursor", tmp_path / "agent.db-wal")
    assert code == 1 and err.startswith(b"Conflict: ") and b"named like" in err


def test_a_chain_resumes_after_a_crash_without_breaking_verify_stream(mixed, tmp_path):
    db, lines = mixed
    chain, out = tmp_path / "memory.chain", tmp_path / "memory.ndjson"
    assert tail(db, "--since", "64", "--chain", chain, stdout=out).returncode == 0
    for name in ("eve", "fay"):
        assert run_cli("add", json.dumps({"id": name, "person/name": name}), db=db).returncode == 0
    whole = expected(db).splitlines(keepends=True)
    with open(out, "ab") as handle:   # killed after the line was flushed, before its link was fsynced
        handle.write(whole[-2] + whole[-1][:10])
    # the documented restart, --since 64 and all: the chain decides where it continues
    assert tail(db, "--since", "64", "--chain", chain, stdout=out).returncode == 0
    assert out.read_bytes() == b"".join(whole)
    verified = run_cli("verify-stream", out, "--chain", chain, json=True)
    assert verified.returncode == 0 and json.loads(verified.stdout)["chained"] == len(whole)
    assert run_cli("add", '{"id":"gus","person/name":"Gus"}', db=db).returncode == 0
    code, piped, _ = tail(db, "--chain", chain)   # a pipe: the chain's last link finds its event in the store
    assert (code, piped) == (0, expected(db).splitlines(keepends=True)[-1])


def test_a_stream_that_does_not_end_where_its_chain_does_is_refused_with_the_repair(mixed, tmp_path):
    db, lines = mixed
    chain, out = tmp_path / "memory.chain", tmp_path / "memory.ndjson"
    assert tail(db, "--chain", chain, stdout=out).returncode == 0
    size = out.stat().st_size
    with open(out, "ab") as handle:
        handle.write(b'{"edited":true}\n')
    code, printed, err = tail(db, "--chain", chain, "--collected", out)
    assert code == 1 and printed == b""
    assert f"`truncate -s {size} {out}`".encode() in err and err.startswith(b"Conflict: ")
    out.write_bytes(b"".join(lines[:-2]))   # cut shorter than the chain: verify-stream says where
    code, _, err = tail(db, "--chain", chain, "--collected", out)
    assert code == 1 and b"verify-stream" in err
    code, _, err = tail(db, "--chain", chain, "--collected", tmp_path / "gone.ndjson")
    assert code == 1 and err.startswith(b"Conflict: the collected file") and b"does not exist" in err
    code, _, err = tail(db, "--after", event(lines[0]), "--collected", out)
    assert code == 1 and err.startswith(b"Unsupported: --collected is checked against")


def test_follow_with_a_cursor_survives_kill_9(mixed, tmp_path):
    db, lines = mixed
    cursor, out = tmp_path / "audit.cursor", tmp_path / "audit.ndjson"
    collector = start(["--db", db, "tail", "--follow", "--cursor", cursor], out)
    try:
        assert wait_until_lines(out, len(lines))
        assert run_cli("add", '{"id":"dee","person/name":"Dee"}', db=db).returncode == 0
        assert wait_until_lines(out, len(lines) + 1)
        assert wait_for(lambda: cursor.exists() and json.loads(cursor.read_bytes())["event"]
                        == event(lines_of(out)[-1]))
    finally:
        kill9(collector)
    assert run_cli("add", '{"id":"eve","person/name":"Eve"}', db=db).returncode == 0
    collector = start(["--db", db, "tail", "--follow", "--cursor", cursor], out)
    try:
        assert wait_until_lines(out, len(lines) + 2)
    finally:
        kill9(collector)
    assert out.read_bytes() == expected(db)


def _documented_loop() -> str:
    text = (Path(__file__).resolve().parents[2] / "docs" / "streams.md").read_text()
    found = re.search(r"```sh\n(#!/bin/sh\n# collect\.sh.*?)```", text, re.S)
    assert found, "docs/streams.md lost its collect.sh recipe"
    return found.group(1)


def _tail_child(loop: subprocess.Popen) -> int | None:
    """The pid of the loop's running `fgraph … tail` (not its `sleep`)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        if int(fields[1]) == loop.pid and b"tail\0--follow" in command:
            return int(entry)
    return None


def test_the_documented_shell_loop_survives_kills_of_its_tail_and_of_itself(mixed, tmp_path):
    db, _ = mixed
    out = tmp_path / "audit.ndjson"
    (tmp_path / "collect.sh").write_text(_documented_loop())
    env = {**os.environ, "PATH": f"{os.path.dirname(FGRAPH)}:{os.environ['PATH']}", "FGRAPH_DB": str(db),
           "AUDIT": str(out)}

    def run() -> subprocess.Popen:
        return start([tmp_path / "collect.sh"], tmp_path / "loop.out", cwd=tmp_path, env=env, executable="/bin/sh")

    loop = run()
    try:
        assert wait_for(lambda: out.exists() and out.read_bytes() == expected(db), timeout=60)
        assert wait_for(lambda: _tail_child(loop) is not None)
        os.kill(_tail_child(loop), signal.SIGKILL)   # the collector dies; the loop restarts it
        assert run_cli("add", '{"id":"dee","person/name":"Dee"}', db=db).returncode == 0
        assert wait_for(lambda: out.read_bytes() == expected(db), timeout=60)
    finally:
        kill9(loop)   # the loop itself dies (a reboot): started again, it goes on
    assert run_cli("add", '{"id":"eve","person/name":"Eve"}', db=db).returncode == 0
    loop = run()
    try:
        assert wait_for(lambda: out.read_bytes() == expected(db), timeout=60)
        assert (tmp_path / "audit.ndjson.cursor").exists()
    finally:
        kill9(loop)
    assert b"Traceback" not in (tmp_path / "loop.out.err").read_bytes()
