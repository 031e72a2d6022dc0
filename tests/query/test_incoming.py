"""Proves what refers to an entity (fgraph.query.incoming, ``Db.incoming`` and ``Db.about``):
referrers through several attributes and entities in attribute-then-entity order, named and
anonymous, cardinality-many and undeclared ref attributes, retracted refs gone, a view at an
earlier time seeing that time's refs, NotFound for an unknown entity, an empty list for an
entity nothing refers to, and a limit that reads at most one row more than it returns."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK

ENGINE = "Analytical Engine"


@pytest.fixture
def db():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as handle:
        handle.declare("notes/on", type="ref")
        handle.declare("decision/references", type="ref", many=True)
        handle.transact({"id": ENGINE, "thing/kind": "machine"})
        handle.transact({"id": "ada", "person/name": "Ada", "notes/on": {"ref": ENGINE}})
        yield handle


def _decision(db, *targets) -> int:
    """A new anonymous entity referring to ``targets``; its id."""
    report = db.transact({"decision/references": [{"ref": t} for t in targets]})
    return next(f["e"] for f in report["asserted"] if f["a"] == "decision/references")


def test_refs_from_several_entities_and_attributes_in_attribute_then_entity_order(db):
    first = _decision(db, ENGINE)
    db.transact({"id": "babbage", "notes/on": {"ref": ENGINE}})
    second = _decision(db, ENGINE)
    page = db.incoming(ENGINE)
    assert page == {"basis_tx": db.latest_tx(), "truncated": False, "items": [
        {"entity": first, "attribute": "decision/references", "name": None},
        {"entity": second, "attribute": "decision/references", "name": None},
        {"entity": "ada", "attribute": "notes/on", "name": "ada"},
        {"entity": "babbage", "attribute": "notes/on", "name": "babbage"},
    ]}
    assert [list(item) for item in page["items"]] == [["entity", "attribute", "name"]] * 4


def test_an_entity_nothing_refers_to_has_an_empty_list(db):
    assert db.incoming("ada") == {"basis_tx": db.latest_tx(), "items": [], "truncated": False}
    assert db.incoming("ada", limit=1)["items"] == []


def test_an_unknown_entity_is_not_found(db):
    with pytest.raises(fgraph.NotFound):
        db.incoming("nobody")
    with pytest.raises(fgraph.NotFound):
        db.about("nobody")


def test_retracted_refs_are_not_shown(db):
    decision = _decision(db, ENGINE, "ada")
    db.retract("ada", "notes/on")
    db.retract(decision, "decision/references", {"ref": ENGINE})
    assert db.incoming(ENGINE)["items"] == []
    assert db.incoming("ada")["items"] == [{"entity": decision, "attribute": "decision/references", "name": None}]


def test_a_view_at_an_earlier_time_sees_the_refs_of_that_time(db):
    before_decision = db.latest_tx()
    decision = _decision(db, ENGINE)
    with_both = db.latest_tx()
    db.retract("ada", "notes/on")
    db.transact({"id": "babbage", "notes/on": {"ref": ENGINE}})
    assert [i["entity"] for i in db.incoming(ENGINE)["items"]] == [decision, "babbage"]
    assert [i["entity"] for i in db.at(with_both).incoming(ENGINE)["items"]] == [decision, "ada"]
    earlier = db.at(before_decision).incoming(ENGINE)
    assert earlier == {"basis_tx": before_decision, "truncated": False,
                       "items": [{"entity": "ada", "attribute": "notes/on", "name": "ada"}]}
    assert db.at(with_both).incoming(ENGINE, limit=1) == {
        "basis_tx": with_both, "truncated": True,
        "items": [{"entity": decision, "attribute": "decision/references", "name": None}]}


def test_cardinality_many_refs_list_each_referrer_once_per_attribute(db):
    decision = _decision(db, ENGINE, "ada")
    other = _decision(db, ENGINE, "ada")
    assert db.incoming(ENGINE)["items"][0] == {"entity": decision, "attribute": "decision/references", "name": None}
    assert len(db.incoming(ENGINE)["items"]) == 3
    assert db.incoming("ada")["items"] == [
        {"entity": decision, "attribute": "decision/references", "name": None},
        {"entity": other, "attribute": "decision/references", "name": None}]


def test_an_undeclared_attribute_holding_a_ref_counts_and_names_render_as_elsewhere(db):
    db.transact({"id": "lab", "place/hosts": {"ref": ENGINE}})
    items = db.incoming(ENGINE)["items"]
    assert {"entity": "lab", "attribute": "place/hosts", "name": "lab"} in items
    # the referrer is rendered as entity() renders a ref to it
    assert db.entity("lab")["place/hosts"] == {"ref": ENGINE}
    assert [i["attribute"] for i in items] == ["notes/on", "place/hosts"]


def test_a_limit_cuts_in_order_and_says_so(db):
    decisions = [_decision(db, ENGINE) for _ in range(3)]
    whole = db.incoming(ENGINE)["items"]
    assert [i["entity"] for i in whole] == decisions + ["ada"]
    for limit in (1, 2, 3):
        assert db.incoming(ENGINE, limit=limit) == {"basis_tx": db.latest_tx(), "items": whole[:limit],
                                                    "truncated": True}
    assert db.incoming(ENGINE, limit=4)["truncated"] is False and db.incoming(ENGINE, limit=4)["items"] == whole
    assert db.incoming(ENGINE, limit=50)["items"] == whole


@pytest.mark.parametrize("limit", [0, -1, True, 1.5, "2"])
def test_a_bad_limit_is_a_type_error(db, limit):
    with pytest.raises(fgraph.TypeError) as caught:
        db.incoming(ENGINE, limit=limit)
    assert "limit" in caught.value.message and caught.value.hint


def test_a_limit_reads_at_most_one_referrer_more_than_it_returns(db):
    db.transact([{"decision/references": [{"ref": ENGINE}]} for _ in range(200)])
    bulk = db.latest_tx()
    db.transact({"id": "later", "thing/kind": "note"})  # so that a view at `bulk` is historical
    rows = []
    db.connection.row_trace = lambda cursor, row: rows.append(row) or row
    try:
        page = db.incoming(ENGINE, limit=5)
        historical = db.at(bulk).incoming(ENGINE, limit=5)
    finally:
        db.connection.row_trace = None
    assert len(page["items"]) == len(historical["items"]) == 5 and page["truncated"] and historical["truncated"]
    assert len(rows) < 60  # not the 201 referrers: 6 per read, plus attribute seeks and catalog lookups
    assert len(db.incoming(ENGINE)["items"]) == 201


def test_about_reads_the_entity_and_its_referrers_at_one_basis(db):
    decision = _decision(db, ENGINE)
    early = db.latest_tx()
    db.retract("ada", "notes/on")
    assert db.about(ENGINE) == {"entity": {"thing/kind": "machine"}, "incoming_truncated": False,
                                "incoming": [{"entity": decision, "attribute": "decision/references", "name": None}]}
    past = db.at(early).about("ada", 2)
    assert past == {"entity": {"notes/on": {"thing/kind": "machine"}, "person/name": "Ada"}, "incoming": [],
                    "incoming_truncated": False}
    assert db.at(early).about(ENGINE, limit=1)["incoming_truncated"] is True
