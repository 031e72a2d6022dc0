"""``litestream:`` readers that keep following or say so (issue 48 items 4 and 5;
fgraph/core/replica_follow.py, docs/replication.md §Following, compactions and errors).

The unit tests drive a ``Follower`` with stand-in connections, in this process (the extension is
never loaded here: once loaded it breaks every other SQLite open of the process). The live tests
read a replica only from subprocesses, with ``LITESTREAM_LOG_LEVEL=DEBUG`` so that any log line on
stdout shows:

- readers held open across at least 3 Litestream compactions (fast compaction levels, see
  ``tests/support/replicas.FAST_COMPACTION``) while a writer commits: every answer equals the
  primary at the basis it reports, or is a typed error; no reader's basis stands still past the
  bound while the primary moves on; stdout carries only the readers' JSON lines;
- ``--json info`` and ``fgraph mcp`` keep the extension's log off stdout;
- a read through a storage outage (SeaweedFS killed) ends within the deadline, typed.

``FGRAPH_TORTURE=full`` holds 4 readers for 5 minutes instead of 2 for 30 s.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw
import pytest

import fgraph
from fgraph.core import replica_follow
from fgraph.core.errors import FormatError, NotFound
from fgraph.db import Db
from tests.support import replicas
from tests.support.cli import run_cli
from tests.support.torture import FULL, size

BIN = Path(sys.executable).parent
LITESTREAM, WEED = BIN / "litestream", BIN / "weed"
KEY, SECRET, BUCKET = "fgraph-test", "fgraph-test-secret", "team"
BOUND_S = replica_follow.STALL_S + 10   # the follower's bound, plus the poll and a loaded machine's slack


# ------------------------------------------------------------------ in-process: stand-in connections

class _Rows:
    def __init__(self, rows):
        self.rows = rows

    def fetchall(self):
        return self.rows


class _Conn:
    """A stand-in for an extension connection: its Litestream txid, and whether it was closed."""

    def __init__(self, txid: str):
        self.txid, self.closed = txid, False

    def execute(self, sql, *args):
        assert "litestream_txid" in sql
        return _Rows([(self.txid,)])

    def close(self, force=False):
        self.closed = True


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    """A clock the test moves, on a follower that reuses its connection (REUSE_S) as it may be set to."""
    fake = _Clock()
    monkeypatch.setattr(replica_follow, "time", fake)
    monkeypatch.setattr(replica_follow, "REUSE_S", 3600.0)
    return fake


def _follower(*txids: str) -> tuple[replica_follow.Follower, list[_Conn]]:
    opened: list[_Conn] = []

    def opener(path):
        opened.append(_Conn(txids[min(len(opened), len(txids) - 1)]))
        return opened[-1]
    return replica_follow.Follower("litestream:file:///x", opener), opened


def test_by_default_every_read_has_a_fresh_connection():
    follower, opened = _follower("0000000000000010")
    seen = [follower.call(lambda: follower.connection) for _ in range(3)]
    assert seen == opened[1:] and len(set(map(id, seen))) == 3 and follower.counts["reopens"] == 3


def test_a_connection_whose_position_stands_still_is_replaced_by_a_fresh_one_ahead(clock):
    follower, opened = _follower("0000000000000010", "0000000000000020")
    assert follower.call(lambda: follower.connection.txid) == "0000000000000010"
    clock.now += replica_follow.STALL_S + 1
    assert follower.call(lambda: follower.connection.txid) == "0000000000000020"
    assert follower.counts["frozen"] == 1 and len(opened) == 2


def test_a_still_position_is_kept_when_a_fresh_open_is_no_further(clock):
    follower, opened = _follower("0000000000000010")
    clock.now += replica_follow.STALL_S + 1
    follower.call(lambda: None)
    assert follower.counts["frozen"] == 0 and len(opened) == 2 and follower.connection is opened[0]
    clock.now += 1   # the comparison restarted the bound: no new open before it runs out again
    follower.call(lambda: None)
    assert len(opened) == 2


def test_an_error_of_the_extension_is_retried_on_fresh_connections(clock):
    follower, opened = _follower("0000000000000010")
    failures = iter([apsw.SQLError("SQL logic error"), apsw.CorruptError("database disk image is malformed")])

    def read():
        error = next(failures, None)
        if error is not None:
            raise error
        return follower.connection
    assert follower.call(read) is opened[-1]
    assert follower.counts["retried"] == 2 and len(opened) == 3


def test_an_error_that_persists_is_typed(clock):
    follower, _ = _follower("0000000000000010")

    def read():
        raise apsw.SQLError("SQL logic error")
    with pytest.raises(FormatError, match="failed 4 reads on fresh connections") as caught:
        follower.call(read)
    assert "litestream restore" in str(caught.value)


def test_a_read_that_does_not_return_ends_at_the_deadline_typed(monkeypatch):
    monkeypatch.setenv("FGRAPH_REPLICA_TIMEOUT", "0.3")
    follower, opened = _follower("0000000000000010")
    release = threading.Event()
    try:
        started = time.monotonic()
        with pytest.raises(NotFound, match="did not answer within 0.3 s") as caught:
            follower.call(lambda: release.wait(30))
        assert time.monotonic() - started < 10
        assert "FGRAPH_REPLICA_TIMEOUT" in str(caught.value)
        assert follower.call(lambda: follower.connection) is opened[-1] and len(opened) == 3  # a fresh one
    finally:
        release.set()


def test_a_fresh_connection_behind_what_was_served_is_never_used(clock, monkeypatch):
    follower, opened = _follower("0000000000000020", "0000000000000010", "0000000000000010", "0000000000000030")
    monkeypatch.setattr(replica_follow.Follower, "_read_txid", lambda self: "0000000000000008")  # went back
    monkeypatch.setattr(replica_follow, "_close_later", lambda conn: conn.close())
    assert follower.call(lambda: follower.connection.txid) == "0000000000000030"
    assert follower.counts["behind"] == 3 and [conn.closed for conn in opened] == [True, True, True, False]


def test_fresh_connections_that_stay_behind_are_a_typed_error(monkeypatch):
    follower, _ = _follower("0000000000000020", "0000000000000010")
    monkeypatch.setattr(replica_follow, "BEHIND_S", 0.3)
    follower.close()
    with pytest.raises(NotFound, match="behind 0000000000000020 which this reader already served"):
        follower.call(lambda: None)


def test_every_public_method_of_db_is_either_bounded_or_known_not_to_be():
    public = {name for name in dir(Db) if not name.startswith("_")}
    assert public - set(replica_follow.GUARDED) - set(replica_follow.UNGUARDED) == set(), "classify the new Db method in fgraph/core/replica_follow.py"


# ------------------------------------------------------------------ live: subprocesses

def _require_tools(*need: Path) -> None:
    missing = [str(path.name) for path in need if not path.exists()]
    if importlib.util.find_spec("litestream_vfs") is None:
        missing.append("litestream-vfs")
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (pip install 'fgraph[litestream,test]')")


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FGRAPH_", "AWS_", "LITESTREAM_"))}
    env.update({"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "FGRAPH_REPLICA_TIMEOUT": "20",
                "LITESTREAM_LOG_LEVEL": "DEBUG", **extra})
    return env


class _Reader:
    """A READER subprocess; its stdout lines are collected by a thread so a wait is always bounded."""

    def __init__(self, name: str, log: Path, env: dict):
        self.log = open(log, "w")
        self.process = subprocess.Popen([sys.executable, "-c", replicas.READER, name], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stdout: list[str] = []
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self):
        for line in self.process.stdout:
            self.stdout.append(line)
            self.lines.put(line)

    def answer(self, timeout: float) -> dict:
        """The next JSON line; a line that is not JSON (a log line on stdout) fails the test."""
        line = self.lines.get(timeout=timeout)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"not the reader's output on stdout: {line[:200]!r}") from None

    def ask(self, what: str, timeout: float) -> dict:
        self.process.stdin.write(what + "\n")
        self.process.stdin.flush()
        return self.answer(timeout)

    def close(self):
        replicas.stop(self.process, signal.SIGKILL)
        for stream in (self.process.stdin, self.process.stdout):
            stream.close()
        self.log.close()


def _primary(tmp_path: Path) -> Path:
    primary = tmp_path / "team.fgraph"
    with fgraph.connect(str(primary)) as db:
        db.transact({"id": "ada", "person/name": "Ada Lovelace"})
    return primary


def _wait_for_replica(name: str, primary: Path, streamer: subprocess.Popen, log: Path) -> None:
    with fgraph.connect(str(primary), read_only=True) as db:
        last = db.latest_tx()
    deadline = time.monotonic() + 60
    while True:
        proc = run_cli("info", db=name, json=True, env=_env(LITESTREAM_LOG_LEVEL="INFO"), timeout=60,
                       executable=str(replicas.FGRAPH))
        if proc.returncode == 0 and json.loads(proc.stdout)["latest_tx"] >= last:
            return
        assert streamer.poll() is None, f"litestream exited: {log.read_text()[-2000:]}"
        assert time.monotonic() < deadline, f"the replica never reached tx {last}: {proc.stderr[-500:]}"
        time.sleep(0.2)


@pytest.fixture
def file_replica(tmp_path):
    """A primary replicated by Litestream with fast compaction to a file replica; yields
    (primary, replica name, replica directory)."""
    _require_tools(LITESTREAM)
    primary = _primary(tmp_path)
    directory = tmp_path / "replica"
    config = replicas.fast_compaction_config(tmp_path, primary, f"file://{directory}")
    log = tmp_path / "litestream.log"
    with open(log, "w") as out:
        streamer = subprocess.Popen([str(LITESTREAM), "replicate", "-config", str(config)], env=_env(),
                                    stdout=out, stderr=subprocess.STDOUT)
    try:
        name = f"litestream:file://{directory}"
        _wait_for_replica(name, primary, streamer, log)
        yield primary, name, directory
    finally:
        replicas.stop(streamer)


def test_readers_held_across_compactions_answer_the_primary_at_their_basis_or_a_typed_error(file_replica, tmp_path):
    primary, name, directory = file_replica
    stop_file = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", replicas.WRITER, str(primary), "w", "1000000", "0.05", "50",
                               str(stop_file)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    readers = [_Reader(name, tmp_path / f"reader-{number}.log", _env()) for number in range(size(2, 4))]
    hold_s = size(30, 300)
    try:
        for reader in readers:
            assert "ready" in reader.answer(60)
        before = replicas.compaction_files(directory)
        started = time.monotonic()
        reads = typed = 0
        errors: dict[str, int] = {}
        advanced = {id(reader): (time.monotonic(), -1) for reader in readers}
        worst = 0.0
        seen: set[str] = set()
        while time.monotonic() - started < hold_s or len(seen - before) < 3:
            seen |= replicas.compaction_files(directory)
            assert time.monotonic() - started < hold_s + 120, "Litestream did not compact 3 times"
            assert writer.poll() is None, writer.stderr.read()
            for reader in readers:
                answer = reader.ask("read", 60)
                reads += 1
                assert "untyped" not in answer, answer
                if "error" in answer:
                    typed += 1
                    errors[answer["error"]] = errors.get(answer["error"], 0) + 1
                    continue
                expected = replicas.names_at(primary, answer["basis"])
                assert answer["names"] == expected, (
                    f"at basis {answer['basis']} ({answer.get('at')}) the replica lacks "
                    f"{sorted(set(expected) - set(answer['names']))[:10]} and adds "
                    f"{sorted(set(answer['names']) - set(expected))[:10]}")
                since, basis = advanced[id(reader)]
                now = time.monotonic()
                if answer["basis"] != basis:
                    advanced[id(reader)] = (now, answer["basis"])
                else:
                    worst = max(worst, now - since)
                    assert now - since < BOUND_S, f"a reader stood at tx {basis} for {now - since:.1f} s"
            time.sleep(0.2)
        compactions = len(seen - before)
        positions = [reader.ask("position", 60) for reader in readers]
    finally:
        stop_file.touch()
        replicas.stop(writer)
        writer.stderr.close()
        for reader in readers:
            reader.close()
    for reader in readers:
        assert all(line.startswith("{") for line in reader.stdout), "a line on stdout that is not the reader's"
    assert typed <= reads // 10, f"{typed} typed errors in {reads} reads: {errors}"
    total = {key: sum(position[key] for position in positions) for key in ("reopens", "frozen", "retried", "timeouts")}
    print(f"\nreplica followers: {len(readers)} readers, {time.monotonic() - started:.0f} s, {compactions} compactions "
          f"(LTX files written to levels 1-9), {reads} reads, {typed} typed errors {errors}, reopens {total['reopens']} (frozen {total['frozen']}, "
          f"retried {total['retried']}, timeouts {total['timeouts']}), longest standstill {worst:.1f} s "
          f"(bound {BOUND_S:g} s){' [full]' if FULL else ''}")


def test_json_info_on_a_replica_prints_one_document_on_stdout(file_replica):
    _, name, _ = file_replica
    proc = run_cli("info", db=name, json=True, env=_env(), timeout=60, executable=str(replicas.FGRAPH))
    assert proc.returncode == 0, proc.stderr[-1000:]
    assert json.loads(proc.stdout)["latest_tx"] > 0, proc.stdout[:500]
    assert "level=DEBUG" in proc.stderr  # the log is there, on stderr


def test_mcp_on_a_replica_carries_only_json_rpc_on_stdout(file_replica, tmp_path):
    _, name, _ = file_replica
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "about", "arguments": {"entity": "ada"}}},
    ]
    server = _Reader.__new__(_Reader)  # the same bounded line collector, around `fgraph mcp`
    server.log = open(tmp_path / "mcp.log", "w")
    server.process = subprocess.Popen([str(replicas.FGRAPH), "--db", name, "mcp"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=server.log, text=True, env=_env())
    server.lines, server.stdout = queue.Queue(), []
    threading.Thread(target=server._collect, daemon=True).start()
    try:
        for request in requests:
            server.process.stdin.write(json.dumps(request) + "\n")
        server.process.stdin.flush()
        answers = [server.answer(60), server.answer(60)]
        server.process.stdin.close()
        server.process.wait(timeout=30)
    finally:
        replicas.stop(server.process, signal.SIGKILL)
        server.process.stdout.close()
        server.log.close()
    assert [answer.get("id") for answer in answers] == [1, 2], answers
    assert not answers[1]["result"].get("isError"), answers[1]
    assert server.stdout and all(json.loads(line).get("jsonrpc") == "2.0" for line in server.stdout)
    assert "level=DEBUG" in (tmp_path / "mcp.log").read_text()


def test_a_read_through_a_storage_outage_ends_typed_within_its_deadline(tmp_path):
    _require_tools(LITESTREAM, WEED)
    primary = _primary(tmp_path)
    weed, s3, ports = replicas.start_weed(tmp_path, BUCKET, _env(), tmp_path / "weed.log")
    url = f"s3://{BUCKET}/team.fgraph?endpoint=http://127.0.0.1:{s3}&force-path-style=true"
    log = tmp_path / "litestream.log"
    stop_file = tmp_path / "stop"
    processes: list[subprocess.Popen] = [weed]
    reader = None
    deadline_s = 5
    try:
        config = replicas.fast_compaction_config(tmp_path, primary, url)
        with open(log, "w") as out:
            streamer = subprocess.Popen([str(LITESTREAM), "replicate", "-config", str(config)], env=_env(),
                                        stdout=out, stderr=subprocess.STDOUT)
        processes.append(streamer)
        name = f"litestream:{url}"
        _wait_for_replica(name, primary, streamer, log)
        processes.append(subprocess.Popen([sys.executable, "-c", replicas.WRITER, str(primary), "w", "1000000", "0.05",
                                           "50", str(stop_file)], stdout=subprocess.DEVNULL))
        reader = _Reader(name, tmp_path / "reader.log", _env(FGRAPH_REPLICA_TIMEOUT=str(deadline_s)))
        assert "ready" in reader.answer(60)
        before = reader.ask("read", 60)
        assert "basis" in before, before
        replicas.stop(weed, signal.SIGKILL)
        answers = []
        outage = time.monotonic()
        # the follower must notice within its bound: reads answer (from what the VFS holds, with their basis)
        # or fail typed, each within a few deadlines (position, a fresh open, the read), never waiting longer
        while time.monotonic() - outage < replica_follow.STALL_S + 4 * deadline_s:
            answer = reader.ask("read", 4 * deadline_s + 10)
            assert "untyped" not in answer, answer
            assert answer["took_s"] < 3 * deadline_s + 5, answer
            answers.append(answer)
        print(f"\nstorage outage: {len(answers)} reads in {time.monotonic() - outage:.0f} s: "
              f"{sum('basis' in answer for answer in answers)} answered, "
              f"{sum(answer.get('error') == 'NotFound' for answer in answers)} NotFound, "
              f"slowest {max(answer['took_s'] for answer in answers):.1f} s (deadline {deadline_s} s)")
        assert any(answer.get("error") == "NotFound" for answer in answers), answers
        message = next(answer["message"] for answer in answers if "error" in answer)
        assert "within 5 s" in message and "storage" in message, message
        # the storage comes back: the same reader answers again, at a basis at least the one it had
        weed, _, _ = replicas.start_weed(tmp_path, BUCKET, _env(), tmp_path / "weed.log", ports)
        processes[0] = weed
        back = time.monotonic()
        while "basis" not in (answer := reader.ask("read", 4 * deadline_s + 10)):
            assert answer.get("error") == "NotFound", answer
            assert time.monotonic() - back < 60, f"the reader did not answer again: {answer}"
        assert answer["basis"] >= before["basis"]
        print(f"storage back: the reader answered again after {time.monotonic() - back:.1f} s")
    finally:
        stop_file.touch()
        for process in reversed(processes):
            replicas.stop(process, signal.SIGKILL)
        if reader is not None:
            reader.close()

