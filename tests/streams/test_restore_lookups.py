"""Proves streams/restore/lookups.py: the bounded caches of a restore answer only what was proved,
read the next events ahead in transaction order, start over past their limit, and a restore that
leans on them reproduces the snapshot byte for byte."""

from __future__ import annotations

import random

import pytest

import fgraph
from fgraph.core.identity import gid_to_uuid
from fgraph.streams.restore import lookups as restore_lookups
from fgraph.streams.restore.lookups import Lookups, Window, selector_key, size_temp_cache
from tests.support.peerlib import deterministic_env


def store(transactions: int):
    db = fgraph.connect(":memory:")
    for k in range(transactions):
        db.transact([{"id": f"p{k}", "p/n": k}])
    return db


def events_of(db) -> list[tuple[str, int]]:
    return [(gid_to_uuid(gid), tx) for gid, tx in db.connection.execute(
        "SELECT i.gid, i.id FROM fgraph_events ev JOIN fgraph_ids i ON i.id = ev.tx WHERE ev.tx > 64 ORDER BY ev.tx")]


def test_selector_keys():
    assert selector_key("ada") == "ada"
    assert selector_key({"eid": "x"}) == ("eid", "x")
    assert selector_key({"eid": 1}) is None and selector_key({"eid": "x", "y": 1}) is None
    assert selector_key(["ada"]) is None and selector_key(3) is None


def test_an_asserting_event_reads_the_next_ones_ahead(monkeypatch):
    db = store(6)
    try:
        events = events_of(db)
        monkeypatch.setattr(restore_lookups, "AHEAD", 3)
        known = Lookups(db.connection)
        assert known.event(events[0][0]) is None and known.event(["not", "hashable"]) is None
        known.remember_event(*events[0], ahead=True)
        assert [known.event(e) for e, _ in events] == [tx for _, tx in events[:4]] + [None, None]
        assert known.identity(("eid", events[2][0])) == events[2][1]   # a transaction named by its event
        known.remember_event(*events[5], ahead=False)                    # a retracting event: itself only
        assert known.event(events[5][0]) == events[5][1] and known.event(events[4][0]) is None
    finally:
        db.close()


def test_the_caches_start_over_past_their_limit(monkeypatch):
    monkeypatch.setattr(restore_lookups, "LIMIT", 4)
    known = Lookups(None)
    for k in range(4):
        known.remember(f"n{k}", k)
    assert known.identity("n3") == 3
    known.remember("n4", 4)
    assert known.ids == {"n4": 4}
    known.remember(None, 9)
    assert known.identity(None) is None and known.ids == {"n4": 4}


def test_a_restore_with_tiny_caches_is_byte_identical(monkeypatch):
    with deterministic_env():
        source = store(40)
        try:
            source.transact(["retract", "p3", "p/n"])
            text = source.snapshot()
        finally:
            source.close()
    monkeypatch.setattr(restore_lookups, "LIMIT", 8)
    monkeypatch.setattr(restore_lookups, "AHEAD", 3)
    with fgraph.connect(":memory:") as db:
        db.restore(text)
        assert db.snapshot() == text


def test_size_temp_cache_gives_the_previous_size_or_none():
    with fgraph.connect(":memory:") as db:
        db.connection.execute("PRAGMA temp.cache_size = -3000")
        assert size_temp_cache(db.connection, -256) == -3000
        assert db.connection.execute("PRAGMA temp.cache_size").fetchone()[0] == -256
    closed = fgraph.connect(":memory:")
    connection = closed.connection
    closed.close()
    assert size_temp_cache(connection, -256) is None


def test_transaction_of_answers_only_for_transactions():
    db = store(2)
    try:
        (event, tx), _ = events_of(db)
        known = Lookups(db.connection)
        assert known.transaction_of(bytes.fromhex(event.replace("-", ""))) == tx
        entity_gid = db.connection.execute("SELECT gid FROM fgraph_ids WHERE gid IS NOT NULL AND id NOT IN "
                                           "(SELECT tx FROM fgraph_events)").fetchone()
        if entity_gid is not None:
            assert known.transaction_of(entity_gid[0]) is None
        assert known.transaction_of(b"\0" * 16) is None
    finally:
        db.close()


def test_the_window_holds_the_transactions_from_the_asserting_one_on(monkeypatch):
    db = store(10)
    try:
        events = events_of(db)
        monkeypatch.setattr(restore_lookups, "WINDOW", 4)
        monkeypatch.setattr(restore_lookups, "CHUNK", 3)
        window = Window(db.connection)
        held = window.at(events[0][1])
        assert held == dict(events[0:6])           # read a chunk at a time until WINDOW are held
        held = window.at(events[3][1])
        assert held == dict(events[3:9]) and [tx for tx, _ in window.order] == [tx for _, tx in events[3:9]]
        assert window.at(events[8][1]) == dict(events[8:10]) and window.ended
        assert window.at(events[9][1]) == dict(events[9:10])
        assert window.at(events[9][1] + 1) == {}  # past the last transaction
    finally:
        db.close()


def test_the_window_reads_on_from_a_transaction_it_jumped_to(monkeypatch):
    db = store(12)
    try:
        events = events_of(db)
        monkeypatch.setattr(restore_lookups, "WINDOW", 2)
        monkeypatch.setattr(restore_lookups, "CHUNK", 2)
        window = Window(db.connection)
        assert window.at(events[0][1]) == dict(events[0:2])
        assert window.at(events[7][1]) == dict(events[7:9])
        assert window.at(events[2][1]) == dict(events[7:9])  # never moved back: a miss, asked by query
        entity = db.connection.execute("SELECT id FROM fgraph_ids WHERE name = 'p3'").fetchone()[0]
        assert entity not in window.at(events[9][1]).values()   # only transactions
    finally:
        db.close()


def _retracting_store_text() -> str:
    with deterministic_env():
        source = store(30)
        try:
            for k in range(0, 30, 3):
                source.transact(["retract", f"p{k}", "p/n"])
            for k in range(1, 30, 4):
                source.transact({"id": f"p{k}", "p/n": -k})
            return "".join(line + "\n" for line in source.iter_snapshot())
        finally:
            source.close()


@pytest.mark.parametrize("window, chunk", [(1, 1), (3, 2), (16384, 1024)])
def test_a_restore_with_any_window_is_byte_identical(monkeypatch, window, chunk):
    text = _retracting_store_text()
    monkeypatch.setattr(restore_lookups, "WINDOW", window)
    monkeypatch.setattr(restore_lookups, "CHUNK", chunk)
    monkeypatch.setattr(restore_lookups, "LIMIT", 8)
    with fgraph.connect(":memory:") as db:
        db.restore(text)
        assert "".join(line + "\n" for line in db.iter_snapshot()) == text


def test_mutated_snapshots_fail_alike_with_and_without_the_window(tmp_path, monkeypatch):
    from fgraph.streams.restore import run as restore_module
    from tests.support.restore_outcome import restore_outcome
    from tests.support.mutations import mutate

    class Empty(Window):
        def at(self, tx):
            return {}

    text = _retracting_store_text()
    rng = random.Random(31)
    seen = set()
    for n in range(60):
        data = text.encode() if n == 0 else mutate(text, rng, sealed=rng.random() < 0.8)
        monkeypatch.setattr(restore_lookups, "WINDOW", rng.choice([1, 4, 16384]))
        monkeypatch.setattr(restore_module, "Window", Window)
        with_window = restore_outcome(tmp_path / f"w{n}.db", data)
        monkeypatch.setattr(restore_module, "Window", Empty)
        without = restore_outcome(tmp_path / f"n{n}.db", data)
        assert with_window == without, (n, with_window[0], without[0])
        seen.add(with_window[0][1] if with_window[0][0] == "error" else "ok")
    assert "ok" in seen and len(seen) >= 3, seen
