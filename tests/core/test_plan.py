"""Proves planner details of spec 03 §5, §7: allocation order with nested maps, tmp drop with id
reuse, and planning order of assertions."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.stores import seeded_db


def test_allocation_order_with_nested_maps():
    db = seeded_db()
    try:
        db.declare("a/ref", ref=True)
        first = db.latest_tx() + 1
        report = db.transact([{"id": "p", "z/k": 1, "a/ref": {"id": "n", "m/x": 1, "b/y": {"json": 1}}},
                              ["assert", "new-e", "new/attr", {"ref": "new-target"}]])
        names = ["p", "n", "b/y", "m/x", "z/k", "new-e", "new/attr", "new-target"]
        assert db.event_records()[-1]["created"] == names
        assert report["tx"] == first + len(names)
        planned = [(f["e"], f["a"]) for f in report["asserted"][1:]]
        assert planned == [("n", "b/y"), ("n", "m/x"), ("p", "a/ref"), ("p", "z/k"), ("new-e", "new/attr")]
    finally:
        db.close()


def test_dropped_tmp_leaves_no_gap():
    db = seeded_db()
    try:
        before = db.latest_tx()
        report = db.transact([{"id": {"tmp": "gone"}, "item/value": 1}, ["retract", {"tmp": "gone"}, "item/value", 1],
                              {"id": "kept", "item/value": 2}])
        assert report["ids"] == {"kept": before + 2}
        assert report["tx"] == before + 3
    finally:
        db.close()


@pytest.mark.parametrize("data, kept", [
    ([{"id": "bob", "p/age": 0}, ["retract", "bob", "p/age", 0]], []),
    ([["assert", "bob4", "p/age", 0], ["retract", "bob4"]], []),
    ([{"id": "g", "p/age": 1}, ["retract", "g", "p/friend", {"ref": "g"}]], [("g", "p/age", 1)]),
])
def test_retractions_see_names_this_request_creates(data, kept):
    db = seeded_db()
    try:
        report = db.transact(data)
        assert [(f["e"], f["a"], f["v"]) for f in report["asserted"][1:]] == kept
    finally:
        db.close()


def test_a_retracted_ref_value_must_already_exist():
    db = seeded_db()
    try:
        db.transact({"id": "ada", "p/age": 0})
        db.declare("p/friend", ref=True)
        with pytest.raises(fgraph.NotFound):
            db.transact([{"id": "bob", "p/age": 0}, ["retract", "ada", "p/friend", {"ref": "bob"}]])
    finally:
        db.close()
