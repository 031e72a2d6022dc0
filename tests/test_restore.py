"""Proves streams/restore.py on its own: a restore runs the caller's final check inside its write
transaction and commits only when that check is ok; any failure leaves the destination pristine."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.streams import restore as restore_module
from tests.peerlib import deterministic_env


def snapshot_text() -> str:
    with deterministic_env():
        db = fgraph.connect(":memory:")
        try:
            db.transact([{"id": "ada", "p/n": 1, "p/s": "x" * 300}, {"p/anon": True}])
            db.transact(["retract", "ada", "p/n"])
            return db.snapshot()
        finally:
            db.close()


def test_final_check_runs_inside_the_transaction_and_can_refuse():
    text = snapshot_text()
    db = fgraph.connect(":memory:")
    try:
        seen = []

        def refusing(conn):
            seen.append(conn.getautocommit())
            return {"ok": False, "problems": ["planted"]}

        with pytest.raises(fgraph.FormatError, match="planted"):
            restore_module.restore(db.connection, text, final_check=refusing)
        assert seen == [False]                       # called inside the write transaction
        assert db.stats()["transactions"] == 1       # still pristine
        assert db.restore(text, details=True)["ok"] is True        # the real doctor accepts it
        assert db.snapshot() == text
    finally:
        db.close()


@pytest.mark.parametrize("cut", [1, 2, -1])
def test_a_truncated_snapshot_leaves_the_destination_pristine(cut):
    lines = snapshot_text().splitlines(keepends=True)
    text = "".join(lines[:cut])
    db = fgraph.connect(":memory:")
    try:
        with pytest.raises(fgraph.FgraphError):
            db.restore(text)
        assert db.stats()["transactions"] == 1
    finally:
        db.close()


def _contradicted(mutate) -> fgraph.FgraphError:
    from tests.test_snapshot import records_of, reseal
    with fgraph.connect(":memory:") as source:
        source.transact({"id": "ada", "p/name": "Ada", "p/age": 36, "p/friend": {"ref": "bob"}})
        source.transact({"id": "bob", "p/name": "Bob"})
        source.transact({"id": "ada", "p/age": 37})
        source.retract("ada", "p/friend")
        records = records_of(source.snapshot())
    line = mutate(records)
    with fgraph.connect(":memory:") as db:
        with pytest.raises(fgraph.FgraphError) as caught:
            db.restore(reseal(records))
        assert db.stats()["transactions"] == 1  # atomically refused
    return caught.value, line


def test_a_contradicting_fact_is_refused_at_its_own_line():
    """Decision 7 is checked by the final doctor's one pass; the refusal still names the first
    contradicting record's line and the event it contradicts."""
    def rewrite_second_name(records):
        names = [i for i, r in enumerate(records) if "fact" in r and r["fact"][1] == "p/name"]
        records[names[1]]["fact"][2] = "Robert"
        return names[1] + 1

    error, line = _contradicted(rewrite_second_name)
    assert error.name == "Conflict" and error.line == line
    assert "a p/name fact disagrees with the event that asserted it" in str(error)


def test_a_fact_retracted_by_the_wrong_event_is_refused_at_its_own_line():
    def move_retraction(records):
        friend = next(i for i, r in enumerate(records) if "fact" in r and r["fact"][1] == "p/friend")
        events = [r["receipt"]["event"] for r in records if "receipt" in r]
        records[friend]["fact"][5] = events[-2]  # the p/age update, which never mentions p/friend
        return friend + 1

    error, line = _contradicted(move_retraction)
    assert error.name == "Conflict" and error.line == line
    assert "a p/friend fact disagrees with the event that retracted it" in str(error)


def test_restore_gives_back_the_connections_temp_cache_size():
    text = snapshot_text()
    with fgraph.connect(":memory:") as db:
        db.connection.execute("PRAGMA temp.cache_size = -3000")
        with pytest.raises(fgraph.FgraphError):
            db.restore(text + "{}\n")                # a record after the footer: refused
        assert db.connection.execute("PRAGMA temp.cache_size").fetchone()[0] == -3000
        db.restore(text)
        assert db.connection.execute("PRAGMA temp.cache_size").fetchone()[0] == -3000
