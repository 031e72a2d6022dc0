"""Proves speculate() (spec 13 §15, fgraph.core.txn.speculation): writes inside report as if
committed, are seen by reads inside, and are all rolled back (also on an exception); ids and
event UUIDs are reused afterwards; nesting, views and backup inside are refused; an excision
inside leaves nothing to scrub; another writer waits for the speculation's write lock."""

from __future__ import annotations

import os

import pytest

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK

CLOCK = CONFORMANCE_CLOCK


def test_writes_inside_are_seen_then_rolled_back(tmp_path, monkeypatch):
    monkeypatch.setenv("FGRAPH_EVENT_SEED", "speculation")
    with fgraph.connect(str(tmp_path / "s.db"), clock=CLOCK) as db:
        db.transact({"id": "ada", "p/n": "Ada"})
        with db.speculate() as same:
            assert same is db
            inside = db.transact({"id": "bob", "p/n": "Bob"})
            assert db.entity("bob") == {"p/n": "Bob"} and len(db.event_records()) == 2
            assert db.q({"find": ["?n"], "where": [["?e", "p/n", "?n"]]})["rows"]
            db.declare_shape("s/x", required=["p/n"])
            excised = db.excise("ada", operation_id="x", if_basis_tx=db.latest_tx())
            assert excised["status"] == "applied" and "scrub" not in excised
            with pytest.raises(fgraph.Unsupported):
                db.speculate()
            with pytest.raises(fgraph.Unsupported):
                db.backup(str(tmp_path / "b.db"))
        with pytest.raises(fgraph.NotFound):
            db.entity("bob")
        assert db.entity("ada") == {"p/n": "Ada"} and db.schema()["shapes"] == []
        again = db.transact({"id": "bob", "p/n": "Bob"})
        assert (again["tx"], again["event"]) == (inside["tx"], inside["event"])
        with pytest.raises(ValueError):
            with db.speculate():
                db.transact({"id": "carl", "p/n": "Carl"})
                raise ValueError("boom")
        with pytest.raises(fgraph.NotFound):
            db.entity("carl")
        with pytest.raises(fgraph.ReadOnly):
            db.at(again["tx"]).speculate()
        assert db.doctor()["ok"] and not os.path.exists(str(tmp_path / "b.db"))
    with fgraph.connect(str(tmp_path / "s.db"), read_only=True) as ro:
        with pytest.raises(fgraph.ReadOnly):
            ro.speculate()


def test_another_writer_before_the_first_write_succeeds_after_it_conflicts(tmp_path):
    path = str(tmp_path / "w.db")
    with fgraph.connect(path, clock=CLOCK) as db, fgraph.connect(path, clock=CLOCK) as other:
        db.transact({"id": "ada", "p/n": "Ada"})
        with db.speculate():
            other.transact({"id": "early", "p/n": "E"})  # the speculation has not written yet
            db.transact({"id": "bob", "p/n": "Bob"})
            with pytest.raises(fgraph.Conflict):
                other.transact({"id": "late", "p/n": "L"})
        other.transact({"id": "late", "p/n": "L"})
        assert sorted(r[0] for r in db.q({"find": ["?n"], "where": [["?e", "p/n", "?n"]]})["rows"]) == \
            ["Ada", "E", "L"]
