"""With FGRAPH_PEER set: for the same random history followed by an excision, the excision event,
the redacted stubs, the whole tail and the snapshot are byte-identical in both runtimes, and each
restores the other's snapshot of the excised store."""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED
from tests.support.peerlib import peer_executable
from tests.support.peerlib import peer_replay
from tests.support.strategies import NAMES, SCHEMA, risky_histories as histories

pytestmark = [pytest.mark.peer, pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set")]
ENV = {"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": CONFORMANCE_SEED}


def peer(*args, stdin: bytes | None = None) -> bytes:
    proc = subprocess.run([peer_executable(), *map(str, args)], input=stdin, capture_output=True,
                          env=dict(os.environ, **ENV), timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


def ours_history(path: str, transactions: list) -> list:
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    try:
        outcomes = []
        for data in transactions:
            db = fgraph.connect(path)
            try:
                db.transact(data)
                outcomes.append(None)
            except fgraph.FgraphError as exc:
                outcomes.append(exc.name)
            finally:
                db.close()
        return outcomes
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def ours_call(path: str, fn):
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    try:
        db = fgraph.connect(path)
        try:
            return fn(db)
        finally:
            db.close()
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, victim=st.sampled_from(NAMES + ["p/name"]))
def test_excised_stores_are_byte_identical(tmp_path_factory, history, victim):
    base = tmp_path_factory.mktemp("x")
    ours, theirs = str(base / "ours.db"), str(base / "theirs.db")
    outcomes = ours_history(ours, [SCHEMA] + history)
    peer_replay(theirs, [SCHEMA] + history, outcomes)   # rejected transactions too: same outcome each
    basis = ours_call(ours, lambda db: db.latest_tx())
    try:
        ours_call(ours, lambda db: db.excise(victim, operation_id="erase", if_basis_tx=basis))
    except fgraph.NotFound:
        return  # the victim never existed in this history
    peer("--db", theirs, "excise", victim, "--operation-id", "erase", "--if-basis-tx", basis)
    our_tail = ours_call(ours, lambda db: "".join(line + "\n" for line in db.iter_events()))
    assert peer("--db", theirs, "tail").decode() == our_tail
    our_snapshot = ours_call(ours, lambda db: db.snapshot())
    assert peer("--db", theirs, "snapshot").decode() == our_snapshot
    restored = str(base / "restored-from-peer.db")
    ours_call(restored, lambda db: db.restore(our_snapshot))
    assert ours_call(restored, lambda db: db.snapshot()) == our_snapshot
    peer_restored = str(base / "peer-restored.db")
    peer("--db", peer_restored, "restore", "-", stdin=our_snapshot.encode())
    assert peer("--db", peer_restored, "snapshot").decode() == our_snapshot
