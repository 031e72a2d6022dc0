"""Proves tail and follow (spec 04 §3–§4): exclusive --since, redacted stubs, bounds, and a follower
that neither misses nor repeats events across concurrent writers, checkpoints and killed writers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import apsw
import pytest

import fgraph
from fgraph.core.canonical import loads
from tests.support.clock import stepping_clock


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "t.db")
    db = fgraph.connect(path, clock=stepping_clock())
    for i in range(5):
        db.transact({"id": f"e{i}", "k/v": i})
    yield db, path
    db.close()


def test_since_is_exclusive_and_bounded(store):
    db, _ = store
    lines = list(db.iter_events())
    assert len(lines) == 5
    txs = [int(r["at"]) for r in map(loads, lines)]
    assert txs == sorted(txs)
    assert list(db.iter_events(65)) == lines          # 65 is not a transaction: same as 64
    first_tx = db.history("e0")[0]["tx"]
    assert list(db.iter_events(first_tx)) == lines[1:]
    assert list(db.iter_events(10_000)) == []
    assert db.event_records(64, first_tx) == [loads(lines[0])]
    for bad in (63, -1, 2**63, True, "70"):
        with pytest.raises(fgraph.ValueTypeError):
            list(db.iter_events(bad))


def test_redacted_payload_renders_stub(store):
    db, path = store
    tx = db.history("e1")[0]["tx"]
    raw = apsw.Connection(path)
    raw.execute("UPDATE fgraph_events SET event_data = NULL WHERE tx = ?", (tx,))
    event_hash = raw.execute("SELECT hex(event_hash) FROM fgraph_events WHERE tx = ?", (tx,)).fetchone()[0]
    raw.close()
    stub = loads(list(db.iter_events(tx - 1, tx))[0])
    assert stub == {"at": db.receipt(tx)["at"], "event": db.receipt(tx)["event"],
                    "event_hash": event_hash.lower(), "fgraph": "event/1", "redacted": True}
    assert list(db.iter_events(tx - 1, tx))[0].startswith('{"at":')


def test_follow_resolves_start_like_a_view(store):
    db, _ = store
    first_tx = db.history("e0")[0]["tx"]
    stop = iter([False] * 3 + [True] * 100)
    got = list(db.follow_lines(first_tx, stop=lambda: next(stop)))
    assert len(got) == 4
    # decision T2 (issue 49 item 2): 65 is an entity, not a transaction: after the last transaction at or below it
    stop = iter([False] * 3 + [True] * 100)
    assert list(db.follow_lines(65, stop=lambda: next(stop))) == list(db.iter_events(64))
    with pytest.raises(fgraph.NotFound):
        next(db.follow_lines(63))  # below genesis: the published name
    with pytest.raises(fgraph.Unsupported):
        next(db.at(first_tx).follow_lines())


WRITER = r"""
import sys, fgraph
db = fgraph.connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    db.transact({"id": f"w{sys.argv[3]}-{i}", "w/v": i})
    if i % 7 == 0:
        db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()
"""


def test_follow_sees_every_commit_once_under_concurrent_writers(store):
    db, path = store
    reader = fgraph.connect(path, read_only=True)
    got: list = []
    done = threading.Event()

    def consume():
        for line in reader.follow_lines(64, stop=done.is_set):
            got.append(line)

    thread = threading.Thread(target=consume)
    thread.start()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, path, "40", str(n)]) for n in range(3)]
    for w in writers:
        assert w.wait(timeout=120) == 0
    deadline = time.time() + 10
    while len(got) < 5 + 120 and time.time() < deadline:
        time.sleep(0.01)
    done.set()
    thread.join(timeout=10)
    reader.close()
    assert len(got) == 125
    assert len(set(got)) == 125
    assert got == list(db.iter_events())


KILLED = r"""
import os, signal, sys, fgraph
db = fgraph.connect(sys.argv[1])
db.transact({"id": "before-kill", "w/v": 1})
conn = db.connection
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO fgraph_events (tx, event_hash, event_data) VALUES (999999, zeroblob(32), 'x')")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_killed_writer_mid_transaction_is_invisible(store):
    db, path = store
    proc = subprocess.run([sys.executable, "-c", KILLED, path])
    assert proc.returncode == -signal.SIGKILL
    lines = list(fgraph.connect(path, read_only=True).iter_events())
    assert len(lines) == 6
    assert all(loads(line)["fgraph"] == "event/1" for line in lines)
    db.transact({"id": "after-kill", "w/v": 2})
    assert len(list(db.iter_events())) == 7


def test_follow_cli_pipe_ends_quietly(store):
    _, path = store
    env = dict(os.environ)
    proc = subprocess.run(f"'{sys.executable}' -m fgraph.cli.main --db '{path}' tail | head -1", shell=True,
                          capture_output=True, env=env, timeout=60)
    assert proc.stdout.count(b"\n") == 1
    assert b"Traceback" not in proc.stderr
