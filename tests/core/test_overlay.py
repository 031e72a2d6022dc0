"""Proves the bulk apply (fgraph.core.overlay) writes exactly what the event-at-a-time path writes.

The property test builds a random source history (maps, operations, schema changes, nohistory,
vectors, long texts, refs, eids), tails it, and applies that stream twice into copies of one
receiver: once in bulk (with batch sizes that put flushes anywhere) and the lean replay planner
(fgraph.core.replay_plan), once event by event with the general planner alone.
Both must give the same outcome and the same bytes: core rows (with ``sqlite_sequence``), tail,
snapshot and full-text rows. Receivers start empty, with their own history (names unify), or
with part of the stream already applied; some streams carry an altered copy of an event, so
the failure (and its rollback) is compared too.
"""

from __future__ import annotations

import os
import shutil

import apsw
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import fgraph
from fgraph.core.canonical import dumps, loads
from fgraph.core.overlay import Overlay
from fgraph.core.replay import Replay
from fgraph.streams import apply as apply_module
from fgraph.streams.apply import apply_stream
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.clock import stepping_clock
from tests.support.corerows import core_rows
from tests.support.histories import PRELUDE, maps, transactions
from tests.support.strategies import transaction as simple_transaction

SOURCE_CLOCK_START = CONFORMANCE_CLOCK - 10_000_000_000


def build(path, history, clock_start: int, nohistory=()) -> None:
    db = fgraph.connect(str(path), clock=stepping_clock(clock_start))
    try:
        for _, data in PRELUDE:
            db.transact(data)
        for attr in nohistory:
            db.transact({"id": attr, "fgraph/nohistory": True})
        for data in history:
            try:
                db.transact(data)
            except fgraph.FgraphError:
                pass
    finally:
        db.close()


def fts_rows(path) -> list:
    conn = apsw.Connection(str(path))
    try:
        return conn.execute("SELECT rowid, text FROM fgraph_fts ORDER BY rowid").fetchall()
    finally:
        conn.close()


def outcome_of(path, lines: list[str], bulk: bool, lean: bool = True) -> tuple:
    """Apply ``lines`` with one path; the summary or the error, and every byte that matters.
    ``lean=False``: every record through the general planner (fgraph.core.replay_plan is off)."""
    db = fgraph.connect(str(path), clock=stepping_clock(CONFORMANCE_CLOCK))
    try:
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(Replay, "lean", lean)
                result = ("ok", apply_stream(db._session, iter(lines), bulk=bulk))
        except fgraph.FgraphError as exc:
            result = ("error", exc.name, exc.line, str(exc))
        tail = [dumps(record) for record in db.event_records()]
        snapshot = list(db.iter_snapshot())
    finally:
        db.close()
    return result, core_rows(str(path)), tail, snapshot, fts_rows(path)


RECEIVER_SCHEMA = [{"id": "p/name", "fgraph/type": "text", "fgraph/unique": True},
                   {"id": "p/age", "fgraph/type": "int", "fgraph/unique": True},
                   {"id": "p/tags", "fgraph/unique": True}, {"id": "p/vec", "fgraph/nohistory": True},
                   {"id": "p/photo", "fgraph/nohistory": True}, {"id": "p/score", "fgraph/many": True}]


@st.composite
def scenarios(draw):
    return {
        "source": draw(st.lists(st.one_of(simple_transaction, simple_transaction, maps(), transactions),
                                    min_size=8, max_size=50)),
        "nohistory": draw(st.lists(st.sampled_from(["p/photo", "p/name", "p/age", "p/score"]), max_size=2)),
        "receiver": draw(st.sampled_from(["empty", "own history", "prefix applied"])),
        "own": draw(st.lists(transactions, max_size=4)),
        # The receiver's own schema may differ from the source's: a value unique or
        # cardinality-one here was not there, so stream events conflict with each other.
        "receiver_schema": draw(st.lists(st.sampled_from(RECEIVER_SCHEMA), max_size=3)),
        "batch_rows": draw(st.sampled_from([1, 3, 7, 40, 8192])),
        "altered": draw(st.one_of(st.none(), st.integers(0, 30))),
        "repeated": draw(st.one_of(st.none(), st.integers(0, 30))),
    }


@settings(max_examples=int(os.environ.get("FGRAPH_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(scenario=scenarios())
def test_bulk_and_event_at_a_time_apply_write_the_same_bytes(tmp_path_factory, monkeypatch, scenario):
    base = tmp_path_factory.mktemp("bulk")
    source = base / "source.db"
    build(source, scenario["source"], SOURCE_CLOCK_START, scenario["nohistory"])
    db = fgraph.connect(str(source))
    try:
        lines = [dumps(record) for record in db.event_records()]
    finally:
        db.close()
    if scenario["repeated"] is not None and lines:    # already applied, maybe while still pending
        lines.append(lines[scenario["repeated"] % len(lines)])
    if scenario["altered"] is not None and lines:
        victim = loads(lines[scenario["altered"] % len(lines)])
        victim["at"] += 1
        lines.insert(len(lines) // 2, dumps(victim))      # same UUID, other payload: Conflict
    receiver = base / "receiver.db"
    if scenario["receiver"] == "own history":
        build(receiver, scenario["own"], CONFORMANCE_CLOCK - 5_000_000_000)
    else:
        fgraph.connect(str(receiver), clock=stepping_clock(CONFORMANCE_CLOCK - 5_000_000_000)).close()
        if scenario["receiver"] == "prefix applied":
            db = fgraph.connect(str(receiver), clock=stepping_clock(CONFORMANCE_CLOCK - 5_000_000_000))
            try:
                apply_stream(db._session, iter(lines[: len(lines) // 2]), bulk=False)
            except fgraph.FgraphError:
                pass
            finally:
                db.close()
    db = fgraph.connect(str(receiver), clock=stepping_clock(CONFORMANCE_CLOCK - 4_000_000_000))
    try:
        for declaration in scenario["receiver_schema"]:
            try:
                db.transact(declaration)
            except fgraph.FgraphError:
                pass
    finally:
        db.close()
    bulk_copy, single_copy = base / "bulk.db", base / "single.db"
    shutil.copy(receiver, bulk_copy)
    shutil.copy(receiver, single_copy)
    before = core_rows(str(receiver))

    monkeypatch.setattr(apply_module, "APPLY_BATCH_ROWS", scenario["batch_rows"])
    planned = []
    lean_plan = Replay.plan_lean
    monkeypatch.setattr(Replay, "plan_lean", lambda self, *args: planned.append(lean_plan(self, *args)) or planned[-1])
    in_bulk = outcome_of(bulk_copy, lines, bulk=True)
    event(f"lean planner took {sum(p is not None for p in planned) * 10 // max(len(planned), 1) * 10}%+ of the records")
    one_by_one = outcome_of(single_copy, lines, bulk=False, lean=False)
    event(f"outcome: {in_bulk[0][0]} {in_bulk[0][1] if in_bulk[0][0] == 'error' else ''}")
    event(f"stream events: {min(len(lines) // 10 * 10, 30)}+")
    assert in_bulk[0] == one_by_one[0]
    assert in_bulk[1] == one_by_one[1]
    assert in_bulk[2:] == one_by_one[2:]
    if in_bulk[0][0] == "error":
        assert in_bulk[1] == before         # all or nothing


def store_with(tmp_path, name: str, data: list):
    path = tmp_path / name
    db = fgraph.connect(str(path), clock=stepping_clock(SOURCE_CLOCK_START))
    for item in data:
        db.transact(item)
    lines = [dumps(record) for record in db.event_records()]
    db.close()
    return lines


def test_a_fact_written_and_deleted_in_one_batch_still_moves_the_fact_id_sequence(tmp_path, deterministic):
    """A nohistory value replaced inside one batch: its row never reaches SQLite between the
    events, yet the next fact id (sqlite_sequence) is the one the event-at-a-time path leaves."""
    lines = store_with(tmp_path, "src.db", [{"id": "p/v", "fgraph/nohistory": True}, {"id": "a", "p/v": 1},
                                            {"id": "a", "p/v": 2}, {"id": "a", "p/v": 3}])
    results = []
    for bulk in (True, False):
        path = tmp_path / f"{bulk}.db"
        fgraph.connect(str(path), clock=stepping_clock(CONFORMANCE_CLOCK)).close()
        results.append(outcome_of(path, lines, bulk=bulk))
        db = fgraph.connect(str(path), clock=stepping_clock(CONFORMANCE_CLOCK + 10**12))
        db.transact({"id": "b", "p/v": 9})
        db.close()
        results[-1] += (core_rows(str(path)),)
    assert results[0] == results[1]
    assert "sequence|fgraph_facts|" in results[0][-1]


def test_facts_flushed_inside_a_commit_before_their_entity_is_registered_are_found(tmp_path, deterministic):
    """Freeing a deleted vector's blob flushes inside the commit, after the commit's facts and before
    its new identities: "cy" is registered in the next batch, yet its fact is already stored, so
    retracting it later in the stream must find it (found by the property test above)."""
    lines = store_with(tmp_path, "src.db", [
        {"id": "bob", "p/vec": {"vector": [0.0]}},
        [["assert", "cy", "p/age", 0], ["retract", "bob"]],
        ["retract", "cy", "p/age", 0]])
    results = []
    for bulk in (True, False):
        path = tmp_path / f"{bulk}.db"
        fgraph.connect(str(path), clock=stepping_clock(CONFORMANCE_CLOCK)).close()
        results.append(outcome_of(path, lines, bulk=bulk, lean=bulk))
    assert results[0] == results[1]
    assert "|0|2|" in results[0][1] and results[0][0][0] == "ok"


def test_flush_writes_ended_facts_before_new_ones(tmp_path):
    """A value retracted and asserted again in one batch: the live unique index sees one row."""
    lines = store_with(tmp_path, "src.db", [{"id": "a", "p/n": "x"}, ["retract", "a", "p/n", "x"],
                                            {"id": "a", "p/n": "x"}, {"id": "a", "p/n": "y"}])
    target = tmp_path / "t.db"
    fgraph.connect(str(target)).close()
    db = fgraph.connect(str(target))
    apply_stream(db._session, iter(lines[:1]), bulk=False)      # "x" is stored
    summary = apply_stream(db._session, iter(lines), bulk=True)   # ended, then live again, in one batch
    live = db.connection.execute("SELECT count(*) FROM fgraph_facts f JOIN fgraph_ids i ON i.id = f.a "
                                 "WHERE i.name = 'p/n' AND f.rx IS NULL").fetchone()[0]
    db.close()
    assert summary["applied"] == 3 and summary["already_applied"] == 1 and live == 1


def test_reads_that_need_the_whole_table_flush_first(tmp_path):
    db = fgraph.connect(str(tmp_path / "o.db"))
    try:
        session = db._session
        conn = session.conn
        conn.execute("BEGIN IMMEDIATE")
        writer = session.buffered()
        cat, rows = writer.catalog(), writer.rows()
        fact_id = rows.fact(70, 1, 5, 5, None, 70)
        assert cat.live_values(70, 1) == [(fact_id, 5, 5, 70)]
        assert cat.live_owners(1, 5, 5) == [70]
        assert conn.execute("SELECT count(*) FROM fgraph_facts WHERE id = ?", (fact_id,)).fetchone()[0] == 0
        assert cat.live_attributes(70) == [1]           # flushed, then asked SQLite
        assert conn.execute("SELECT count(*) FROM fgraph_facts WHERE id = ?", (fact_id,)).fetchone()[0] == 1
        rows.retract(fact_id, 5, 5, 71, delete=False)
        assert cat.live_values(70, 1) == []
        writer.overlay.flush()
        assert conn.execute("SELECT rx FROM fgraph_facts WHERE id = ?", (fact_id,)).fetchone()[0] == 71
        conn.execute("ROLLBACK")
    finally:
        db.close()


def test_a_gid_taken_twice_in_one_batch_is_refused_like_sqlite_would(tmp_path):
    db = fgraph.connect(str(tmp_path / "g.db"))
    try:
        conn = db._session.conn
        conn.execute("BEGIN IMMEDIATE")
        overlay = Overlay(conn, db._session.identity_cache)
        overlay.add_identity(100, None, b"g" * 16, 100)
        with pytest.raises(apsw.ConstraintError):
            overlay.add_identity(101, None, b"g" * 16, 101)
        conn.execute("ROLLBACK")
    finally:
        db.close()


def flushes_of(tmp_path, monkeypatch, lines: list, held, **bounds) -> list:
    """Apply ``lines`` in bulk under smaller ``bounds``; ``held(overlay)`` at every flush."""
    flushes = []
    original = Overlay.flush

    def counting(self):
        flushes.append(held(self))
        original(self)

    monkeypatch.setattr(Overlay, "flush", counting)
    for name, value in bounds.items():
        monkeypatch.setattr(apply_module, name, value)
    target = tmp_path / "t.db"
    fgraph.connect(str(target)).close()
    db = fgraph.connect(str(target))
    assert apply_stream(db._session, iter(lines))["applied"] == len(lines)
    db.close()
    return flushes


def test_memory_is_bounded_by_the_batch(tmp_path, monkeypatch):
    lines = store_with(tmp_path, "src.db", [{"id": f"e{i}", "p/n": i} for i in range(40)])
    flushes = flushes_of(tmp_path, monkeypatch, lines, len, APPLY_BATCH_ROWS=10)
    assert len(flushes) >= 8 and max(flushes) < 10 + 10   # one event's rows past the bound at most


def test_a_unique_value_held_by_a_pending_fact_conflicts(tmp_path, deterministic):
    """The receiver declares p/name unique; the source gave two entities one name. The second
    event conflicts with the first even while the first one's rows are still in the overlay."""
    lines = store_with(tmp_path, "src.db", [{"id": "ada", "p/name": "x"}, {"id": "bob", "p/name": "x"}])
    outcomes = []
    for bulk in (True, False):
        path = tmp_path / f"{bulk}.db"
        db = fgraph.connect(str(path), clock=stepping_clock(CONFORMANCE_CLOCK))
        db.transact({"id": "p/name", "fgraph/type": "text", "fgraph/unique": True})
        db.close()
        outcomes.append(outcome_of(path, lines, bulk=bulk))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0][:3] == ("error", "Conflict", 2)


def test_large_values_flush_the_batch_early(tmp_path, monkeypatch):
    """Rows are not the only bound: a stream of large values flushes by bytes held."""
    lines = store_with(tmp_path, "src.db", [{"id": f"e{i}", "p/bio": "x" * 100_000} for i in range(12)])
    flushes = flushes_of(tmp_path, monkeypatch, lines, lambda overlay: overlay.value_bytes, BATCH_BYTES=250_000)
    # each event holds its 100,000-byte value twice (the fact's blob and the event's payload)
    assert len(flushes) >= 5 and max(flushes) < 250_000 + 2 * 100_000 + 10_000
