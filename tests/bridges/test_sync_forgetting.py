"""Proves that an excision travels (issue 33, docs/forgetting.md F1–F4) over file sync and a real
``nats-server -js`` on loopback: after the propagated excision no canary byte is left in any
receiver's database, WAL or sidecar files, nor in the stream's stored messages; doctor is clean
everywhere; everything else (receivers' own writes included) is what a receiver that never saw
the excised entity holds; a store reached along two paths excises once; a receiver that was
offline takes the remainders of the redacted events and never the erased content; a receiver
killed with SIGKILL during the propagated excision is reported by doctor and converges on retry."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

import fgraph
from fgraph.bridges.sync import files as file_sync
from fgraph.bridges.sync.adapters import memory
from fgraph.core.canonical import dumps
from tests.support import canaries, syncing
from tests.support.nats import needs_server
from tests.support.syncing import FGRAPH, env


def history(path: Path, others: int = 6) -> None:
    with fgraph.connect(path) as db:
        canaries.write_history(db, others)


def own_writes(path: Path) -> None:
    """What a receiver writes itself: dave (kept) and a note on ada (erased with her)."""
    with fgraph.connect(path) as db:
        db.transact([{"id": "dave", "note/text": "dave is local", "rel/knows": {"ref": "p3"}}], by="r")
        db.transact([{"id": "ada", "note/own": canaries.SHORT + "-own"}], by="r")


def excise(path: Path, op: str = "forget-ada") -> dict:
    with fgraph.connect(path) as db:
        return db.excise("ada", operation_id=op, if_basis_tx=db.latest_tx())


def state(path: Path) -> dict:
    with fgraph.connect(path, read_only=True) as db:
        return {"others": dumps(canaries.others_state(db)), "ordinary": canaries.ordinary_lines(db),
                "doctor": db.diagnose().report, "ada": db.entity("ada") if _named(db, "ada") else None}


def _named(db, name):
    try:
        db.resolve(name)
        return True
    except fgraph.NotFound:
        return False


def assert_forgotten(tmp: Path, *names: str) -> None:
    for name in names:
        assert canaries.canary_hits(tmp, name + ".db") == {}, name
        found = state(tmp / f"{name}.db")
        assert found["doctor"]["ok"], (name, found["doctor"]["problems"])
        assert not found["ada"], (name, found["ada"])
        assert not (tmp / f"{name}.db.excisions-owed").exists(), name


def test_a_propagated_excision_leaves_no_canary_and_the_rest_as_a_receiver_that_never_saw_her(tmp_path):
    history(tmp_path / "a.db")
    file_sync.sync([tmp_path / "a.db"], tmp_path / "r.db")
    own_writes(tmp_path / "r.db")
    assert canaries.canary_hits(tmp_path, "r.db")                 # the receiver holds her canaries
    excise(tmp_path / "a.db")
    summary = file_sync.sync([tmp_path / "a.db"], tmp_path / "r.db")
    assert [e["status"] for e in summary["excisions"]] == ["applied"] and summary["excisions"][0]["scrub_complete"]
    assert summary["redacted_held"] == 0 and summary["events"] == 1   # caught up: only the excision is new
    # a receiver that never saw her: synced after the excision, the same writes of its own, minus ada's
    file_sync.sync([tmp_path / "a.db"], tmp_path / "never.db")
    with fgraph.connect(tmp_path / "never.db") as db:
        db.transact([{"id": "dave", "note/text": "dave is local", "rel/knows": {"ref": "p3"}}], by="r")
    assert_forgotten(tmp_path, "a", "r", "never")
    mine, never, source = state(tmp_path / "r.db"), state(tmp_path / "never.db"), state(tmp_path / "a.db")
    assert mine["others"] == never["others"]                      # byte-identical, dave included
    assert "dave is local" in mine["others"] and "carol keeps this" in mine["others"]
    assert source["ordinary"] <= mine["ordinary"] and source["ordinary"] <= never["ordinary"]
    again = file_sync.sync([tmp_path / "a.db"], tmp_path / "r.db")
    assert [e["status"] for e in again["excisions"]] == ["already_applied"]
    with fgraph.connect(tmp_path / "r.db", read_only=True) as db:
        assert db.latest_tx() == summary["basis_tx"]               # the re-run wrote nothing


def test_two_hops_and_a_store_reached_along_two_paths_excise_once(tmp_path):
    history(tmp_path / "a.db")
    file_sync.sync([tmp_path / "a.db"], tmp_path / "hub.db")
    file_sync.sync([tmp_path / "hub.db"], tmp_path / "edge.db")
    own_writes(tmp_path / "edge.db")
    excise(tmp_path / "a.db")
    hub = file_sync.sync([tmp_path / "a.db"], tmp_path / "hub.db")["excisions"]
    edge = file_sync.sync([tmp_path / "hub.db"], tmp_path / "edge.db")["excisions"]
    direct = file_sync.sync([tmp_path / "a.db"], tmp_path / "edge.db")["excisions"]
    assert [e["status"] for e in hub + edge + direct] == ["applied", "applied", "already_applied"]
    assert hub[0]["origin"] == edge[0]["origin"] == direct[0]["origin"] == hub[0]["event"]
    assert edge[0]["event"] != hub[0]["event"]                    # the hub's own excision event, passed on
    with fgraph.connect(tmp_path / "edge.db", read_only=True) as db:
        excisions = [line for line in db.iter_events() if '"redacts"' in line]
    assert len(excisions) == 1
    assert_forgotten(tmp_path, "a", "hub", "edge")
    assert "dave is local" in state(tmp_path / "edge.db")["others"]


def test_an_offline_receiver_takes_the_remainders_and_never_the_erased(tmp_path):
    history(tmp_path / "a.db")
    with fgraph.connect(tmp_path / "a.db", read_only=True) as db:
        first_two = db.event_records()[:2]                         # ada's canaries and p0: then offline
    with fgraph.connect(tmp_path / "half.db") as db:
        db.apply([json.dumps(record) for record in first_two])
    excise(tmp_path / "a.db")
    summary = file_sync.sync([tmp_path / "a.db"], tmp_path / "half.db")
    assert summary["excisions"][0]["status"] == "applied"          # ada's first event: held, redacted here
    assert summary["remainders"] == 3       # p0's and carol's parts of mixed events; an empty one for the rest
    assert summary["redacted_held"] == 1
    fresh = file_sync.sync([tmp_path / "a.db"], tmp_path / "fresh.db")
    assert fresh["excisions"][0]["status"] == "nothing_here" and fresh["remainders"] == 4   # one per redacted event
    assert_forgotten(tmp_path, "half", "fresh")
    source, half, new = (state(tmp_path / f"{n}.db")["others"] for n in ("a", "half", "fresh"))
    assert half == new == source                                    # all that survived at the source, and only that
    again = file_sync.sync([tmp_path / "a.db"], tmp_path / "fresh.db")
    assert again["remainders"] == 0 and again["applied"] == 0       # a remainder is taken once


def test_the_published_runtime_keeps_refusing_redacted_streams_and_applies_a_remainder(tmp_path):
    peer = os.environ.get("FGRAPH_PEER")
    if not peer:
        pytest.skip("FGRAPH_PEER is not set: no published runtime to compare with")
    history(tmp_path / "a.db")
    excise(tmp_path / "a.db")
    with fgraph.connect(tmp_path / "a.db", read_only=True) as db:
        lines = list(db.iter_events())
        stub = next(line for line in lines if '"redacted":true' in line and '"redacts"' not in line)
        excision = next(line for line in lines if '"redacts"' in line)
        remainder = db.redacted_remainder(json.loads(stub)["event"])
    for i, line in enumerate((stub, excision)):
        (tmp_path / f"bad{i}.ndjson").write_text(line + "\n")
        for runtime in (peer, FGRAPH):
            proc = subprocess.run([runtime, "--db", str(tmp_path / f"t{i}.db"), "apply", str(tmp_path / f"bad{i}.ndjson")],
                                  capture_output=True, env=env(), timeout=120)
            assert proc.returncode != 0 and b"Traceback" not in proc.stderr, (runtime, proc.stderr)
    (tmp_path / "rem.ndjson").write_text(remainder + "\n")
    for name, runtime in (("peer", peer), ("ours", FGRAPH)):
        proc = subprocess.run([runtime, "--db", str(tmp_path / f"{name}.db"), "apply", str(tmp_path / "rem.ndjson")],
                              capture_output=True, env=env(), timeout=120)
        assert proc.returncode == 0, (runtime, proc.stderr)
    tails = [subprocess.run([runtime, "--db", str(tmp_path / f"{name}.db"), "tail", "--since", "64"],
                            capture_output=True, env=env(), timeout=120).stdout for name, runtime in
             (("peer", peer), ("ours", FGRAPH))]
    assert tails[0] == tails[1] == (remainder + "\n").encode()    # an ordinary event/1 line, byte for byte


def _kill_when_owed(args, note: Path, delay: float) -> bool:
    """Start ``fgraph ARGS``; SIGKILL it ``delay`` s after it notes an owed excision. True when it was
    killed with the excision under way (the note was there), False when it finished first."""
    proc = subprocess.Popen([FGRAPH, *map(str, args)], env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while proc.poll() is None and not note.exists():
            time.sleep(0.0005)
        if proc.poll() is not None:
            return False
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        return proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()


def test_a_receiver_killed_during_the_propagated_excision_is_reported_and_converges(tmp_path):
    history(tmp_path / "a.db", others=1500)           # enough rows that the receiver's scrub takes a while
    file_sync.sync([tmp_path / "a.db"], tmp_path / "base.db")
    excise(tmp_path / "a.db")
    file_sync.sync([tmp_path / "a.db"], tmp_path / "never.db")
    killed = reported = 0
    for i, delay in enumerate((0.0, 0.0, 0.002, 0.01, 0.03, 0.08)):
        target = tmp_path / f"r{i}.db"
        shutil.copy(tmp_path / "base.db", target)
        shutil.copy(tmp_path / "base.db.sync.json", tmp_path / f"r{i}.db.sync.json") \
            if (tmp_path / "base.db.sync.json").exists() else None
        if _kill_when_owed(["sync", "--from", tmp_path / "a.db", "--to", target],
                           tmp_path / f"r{i}.db.excisions-owed", delay):
            killed += 1
            doctor = subprocess.run([FGRAPH, "--db", str(target), "doctor"], env=env(), capture_output=True,
                                    timeout=120)
            carried = subprocess.run([FGRAPH, "--db", str(target), "tail", "--since", "64"], env=env(),
                                     capture_output=True, timeout=120).stdout.count(b'"redacts"')
            if (tmp_path / f"r{i}.db.excisions-owed").exists() and not carried:   # noted, not yet carried out
                assert doctor.returncode == 1 and b"excision of \"ada\"" in doctor.stdout, doctor.stdout
                reported += 1
        retry = subprocess.run([FGRAPH, "sync", "--from", str(tmp_path / "a.db"), "--to", str(target)], env=env(),
                               capture_output=True, timeout=300)
        assert retry.returncode == 0, retry.stderr
        assert_forgotten(tmp_path, f"r{i}")
        assert state(target)["others"] == state(tmp_path / "never.db")["others"]
    assert killed >= 2 and reported >= 1, (killed, reported)


# ----------------------------------------------------------------- through NATS JetStream

def cli(*args, cwd) -> dict:
    """What ``fgraph --json ARGS`` reports, run by tests/support/syncing.cli with five minutes allowed."""
    return json.loads(syncing.cli("--json", *args, cwd=cwd, timeout=300).stdout)


@needs_server
def test_through_jetstream_the_erased_records_are_deleted_and_every_consumer_forgets(tmp_path, server):
    one, two = f"{server.url}/ONE", f"{server.url}/TWO"
    history(tmp_path / "a.db")
    cli("sync", "--from", "a.db", "--to", one, "--create-stream", cwd=tmp_path)
    cli("sync", "--from", one, "--to", "hub.db", cwd=tmp_path)          # a → ONE → hub → TWO → edge
    cli("sync", "--from", "hub.db", "--to", two, "--create-stream", cwd=tmp_path)
    cli("sync", "--from", two, "--to", "edge.db", cwd=tmp_path)
    own_writes(tmp_path / "edge.db")
    assert canaries.canary_hits(server.root) and canaries.canary_hits(tmp_path, "edge.db")
    excise(tmp_path / "a.db")
    published = cli("sync", "--from", "a.db", "--to", one, cwd=tmp_path)["excisions"]
    assert published[0]["messages_deleted"] >= 3 and published[0]["remainders_published"] == 4
    hub = cli("sync", "--from", one, "--to", "hub.db", cwd=tmp_path)["excisions"]
    passed_on = cli("sync", "--from", "hub.db", "--to", two, cwd=tmp_path)["excisions"]
    edge = cli("sync", "--from", two, "--to", "edge.db", cwd=tmp_path)["excisions"]
    assert [e["status"] for e in hub + edge] == ["applied", "applied"] and passed_on[0]["messages_deleted"] >= 3
    # a consumer that comes later never had anything of hers
    late = cli("sync", "--from", one, "--to", "late.db", cwd=tmp_path)
    assert late["excisions"][0]["status"] == "nothing_here" and late["remainders"] == 4
    server.stop()                                                    # the server's files, flushed and closed
    assert canaries.canary_hits(server.root) == {}
    assert_forgotten(tmp_path, "a", "hub", "edge", "late")
    file_sync.sync([tmp_path / "a.db"], tmp_path / "never.db")
    never = state(tmp_path / "never.db")["others"]
    assert state(tmp_path / "hub.db")["others"] == state(tmp_path / "late.db")["others"] == never
    assert "dave is local" in state(tmp_path / "edge.db")["others"]


@needs_server
def test_a_consumer_killed_during_the_propagated_excision_converges_on_retry(tmp_path, server):
    url = f"{server.url}/EV"
    history(tmp_path / "a.db", others=1500)
    cli("sync", "--from", "a.db", "--to", url, "--create-stream", cwd=tmp_path)
    delays = (0.0, 0.003, 0.02)
    for i in range(len(delays)):                        # each its own store, so its own durable consumer
        cli("sync", "--from", url, "--to", f"r{i}.db", "--ack-wait", "2", cwd=tmp_path)
    excise(tmp_path / "a.db")
    cli("sync", "--from", "a.db", "--to", url, cwd=tmp_path)
    file_sync.sync([tmp_path / "a.db"], tmp_path / "never.db")
    killed = 0
    for i, delay in enumerate(delays):
        killed += _kill_when_owed(["sync", "--from", url, "--to", tmp_path / f"r{i}.db", "--ack-wait", "2"],
                                  tmp_path / f"r{i}.db.excisions-owed", delay)
        again = cli("sync", "--from", url, "--to", f"r{i}.db", "--ack-wait", "2", cwd=tmp_path)   # [] when the kill came after the ack
        assert [e["status"] for e in again["excisions"]] in ([], ["applied"], ["already_applied"]), (i, again)
        assert_forgotten(tmp_path, f"r{i}")
        assert state(tmp_path / f"r{i}.db")["others"] == state(tmp_path / "never.db")["others"]
    assert killed >= 1, "no kill landed inside the propagated excision"


# ----------------------------------------------------------------- an in-memory log that redelivers out of order

class ShufflingLog(memory.MemoryLog):
    """The shipped memory log, faulty on purpose: ``fetch`` hands out what is ready in a seeded
    random order, so a record often arrives before its predecessor, erased ones included."""

    rng = None

    def order(self, ready):
        self.rng.shuffle(ready)
        return ready


@pytest.mark.parametrize("seed", range(6))
def test_a_log_that_delivers_out_of_order_still_forgets_and_keeps_the_source_order(tmp_path, seed):
    from fgraph.bridges.sync import log as sync_log
    history(tmp_path / "a.db")
    url = f"memory://shuffled-{uuid.uuid4().hex}"
    log = ShufflingLog.open(url, create_stream=True)
    log.rng = random.Random(seed)
    sync_log.publish([tmp_path / "a.db"], log)
    sync_log.consume(log, tmp_path / "early.db", batch_size=3)        # had everything before the excision
    excise(tmp_path / "a.db")
    with fgraph.connect(tmp_path / "a.db") as db:
        db.transact([{"id": "p1", "note/text": "after the excision"}])
    summary = sync_log.publish([tmp_path / "a.db"], log)
    assert summary["excisions"][0]["messages_deleted"] == 4          # the four redacted events
    early = sync_log.consume(log, tmp_path / "early.db", batch_size=3)
    late = sync_log.consume(log, tmp_path / "late.db", batch_size=3)  # a consumer that came later
    assert [e["status"] for e in early["excisions"]] == ["applied"]
    assert [e["status"] for e in late["excisions"]] == ["nothing_here"] and late["remainders"] == 4
    file_sync.sync([tmp_path / "a.db"], tmp_path / "never.db")
    assert_forgotten(tmp_path, "early", "late")
    never = state(tmp_path / "never.db")["others"]
    assert state(tmp_path / "early.db")["others"] == state(tmp_path / "late.db")["others"] == never
    assert "after the excision" in never
    memory.drop(url)


def test_a_receiver_whose_own_data_refuses_a_remainder_is_told_to_restore_from_a_snapshot(tmp_path):
    with fgraph.connect(tmp_path / "a.db") as db:
        db.declare("user/email", type="text", unique=True)
        db.transact([{"id": "ada", "note/text": canaries.SHORT}, {"id": "carol", "user/email": "c@example.test"}])
        db.excise("ada", operation_id="forget-ada", if_basis_tx=db.latest_tx())
    with fgraph.connect(tmp_path / "r.db") as db:
        db.declare("user/email", type="text", unique=True)
        db.transact([{"id": "dave", "user/email": "c@example.test"}])      # the receiver's own, first
    proc = subprocess.run([FGRAPH, "sync", "--from", "a.db", "--to", "r.db"], cwd=tmp_path, env=env(),
                          capture_output=True, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and err.startswith("Conflict: sync from 'a.db' stopped at event ") and "Traceback" not in err
    assert "remainder of that redacted event cannot be applied" in err and "restore this store from a snapshot" in err
    # and the way out works: a store restored from the source's snapshot takes the stream as it is
    snapshot = subprocess.run([FGRAPH, "--db", "a.db", "snapshot"], cwd=tmp_path, env=env(), capture_output=True,
                              check=True, timeout=120).stdout
    (tmp_path / "s.ndjson").write_bytes(snapshot)
    subprocess.run([FGRAPH, "--db", "new.db", "restore", "s.ndjson"], cwd=tmp_path, env=env(), check=True,
                   capture_output=True, timeout=120)
    summary = file_sync.sync([tmp_path / "a.db"], tmp_path / "new.db")
    assert summary["redacted_held"] >= 1 and summary["remainders"] == 0 and summary["applied"] == 0
    assert_forgotten(tmp_path, "new")
