"""Proves core/replay_plan.py: the lean planner takes the common shapes of a replayed event and
commits them as the general planner would, and hands every record it cannot decide without doubt
back to the general planner (tests/core/test_overlay.py compares both on random histories)."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.core.canonical import dumps
from fgraph.core.replay import Replay
from fgraph.core.replay_plan import LeanReplay
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.clock import stepping_clock
from tests.support.corerows import core_rows

OTHER_EID = "4fdae471-2e64-57b7-bc98-bcc828aa539c"


def records_of(*writes, declare=()) -> list[dict]:
    db = fgraph.connect(":memory:", clock=stepping_clock(CONFORMANCE_CLOCK - 10_000_000))
    try:
        for name, options in declare:
            db.declare(name, **options)
        for data in writes:
            db.transact(data)
        return list(db.event_records())
    finally:
        db.close()


def lean_plan(db, record):
    session = db._session
    return LeanReplay(session.catalog(), session.schema_cache).plan(record)


def applied(path, lines, lean: bool, monkeypatch):
    monkeypatch.setattr(Replay, "lean", lean)
    db = fgraph.connect(str(path), clock=stepping_clock(CONFORMANCE_CLOCK))
    try:
        try:
            outcome = db.apply_summary("".join(line + "\n" for line in lines))
        except fgraph.FgraphError as exc:
            outcome = (exc.name, str(exc))
    finally:
        db.close()
    return outcome, core_rows(str(path))


def test_common_shapes_are_planned_lean_and_commit_the_general_planners_rows(tmp_path, monkeypatch):
    records = records_of(
        {"id": "ada", "p/name": "Ada", "p/age": 36, "p/tags": ["x", "y"]},
        {"id": "bob", "p/name": "Bob", "p/friend": {"ref": "ada"}, "p/bio": "long " * 200},
        {"id": "ada", "p/age": 37, "p/tags": ["z"]},                 # supersedes, adds to a many
        [{"p/note": "anonymous"}, {"id": "cy", "p/friend": {"ref": "bob"}}],
        ["retract", "bob", "p/friend", {"ref": "ada"}],
        declare=[("p/tags", {"many": True}), ("p/friend", {"ref": True}), ("p/name", {"unique": True, "type": "text"})])
    lines = [dumps(r) for r in records]
    receiver = fgraph.connect(":memory:")
    try:
        receiver.apply_summary("".join(line + "\n" for line in lines[:3]))   # the declarations
        for record in records[3:]:
            assert lean_plan(receiver, record) is not None
            receiver.apply_summary(dumps(record) + "\n")
    finally:
        receiver.close()
    outcomes = [applied(tmp_path / f"{lean}.db", lines, lean, monkeypatch) for lean in (True, False)]
    assert outcomes[0][0]["applied"] == len(lines)
    assert outcomes[0] == outcomes[1]


def test_a_receiver_holding_the_value_already_commits_no_fact_for_it(tmp_path, monkeypatch, deterministic):
    records = records_of({"id": "ada", "p/age": 36})
    lines = [dumps(r) for r in records]
    outcomes = []
    for lean in (True, False):
        path = tmp_path / f"{lean}.db"
        db = fgraph.connect(str(path), clock=stepping_clock(CONFORMANCE_CLOCK - 20_000_000))
        db.transact({"id": "ada", "p/age": 36})
        assert lean_plan(db, records[0])[0].asserted == []
        db.close()
        outcomes.append(applied(path, lines, lean, monkeypatch))
    assert outcomes[0] == outcomes[1]


def with_record(record: dict, **changes) -> dict:
    return {**record, **changes}


def refusals():
    """(why, receiver writes, record change) the lean planner hands to the general planner."""
    return [
        ("transaction facts", [], lambda r: with_record(r, tx_facts=[["audit/tag", "x", "text"]])),
        ("a system attribute", [], lambda r: with_record(r, asserted=[["p/age", "fgraph/doc", "d", "text"]])),
        ("a reserved name", [], lambda r: with_record(r, created=["fgraph/mine"],
                                                      asserted=[["fgraph/mine", "p/age", 1, "int"]])),
        ("a name the created list omits", [], lambda r: with_record(r, created=[])),
        ("an unknown eid", [], lambda r: with_record(r, asserted=[[{"eid": OTHER_EID}, "p/age", 1, "int"]])),
        ("a created eid no fact uses", [], lambda r: with_record(r, created=r["created"] + [{"eid": OTHER_EID}])),
        ("two values for a cardinality-one attribute", [],
         lambda r: with_record(r, asserted=r["asserted"] + [["ada", "p/age", 99, "int"]])),
        ("a type mismatch", [{"id": "p/age", "fgraph/type": "text"}], lambda r: r),
        ("a unique value another entity holds", [{"id": "p/age", "fgraph/type": "int", "fgraph/unique": True},
                                                 {"id": "zed", "p/age": 36}], lambda r: r),
        ("a store with shapes", [{"id": "person", "fgraph/shape-required": {"ref": "p/age"}},
                                 {"id": "zed", "p/age": 1, "fgraph/shape": {"ref": "person"}}], lambda r: r),
        ("a vector whose dimension is inferred", [],
         lambda r: with_record(r, asserted=[["ada", "p/vec", {"vector": [1.0, 2.0]}, "vector"]])),
    ]


@pytest.mark.parametrize("why, writes, change", refusals(), ids=[case[0] for case in refusals()])
def test_doubtful_records_go_to_the_general_planner_which_decides_alike(tmp_path, monkeypatch, deterministic, why, writes,
                                                                      change):
    record = change(records_of({"id": "ada", "p/age": 36})[0])
    db = fgraph.connect(":memory:")
    try:
        for data in writes:
            db.transact(data)
        if "p/vec" in dumps(record):
            db.transact({"id": "p/vec", "fgraph/nohistory": True})
        assert lean_plan(db, record) is None, why
    finally:
        db.close()
    outcomes = []
    for lean in (True, False):
        path = tmp_path / f"{lean}.db"
        seeded = fgraph.connect(str(path), clock=stepping_clock(CONFORMANCE_CLOCK - 20_000_000))
        for data in writes:
            seeded.transact(data)
        seeded.close()
        outcomes.append(applied(path, [dumps(record)], lean, monkeypatch))
    assert outcomes[0] == outcomes[1]
