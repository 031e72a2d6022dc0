"""Proves the final-state constraints of a plan (spec 03 §4–§5): declarations, types, cardinality,
uniqueness and shapes end in the typed error the spec names, leave the database unchanged, and
hold regardless of the order of the items in a request."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.clock import stepping_clock
from tests.support.corerows import core_rows_of

LONG = "y" * 300   # stored as a blob (tag 8), still of type text


@pytest.fixture
def db():
    database = fgraph.connect(":memory:", clock=stepping_clock())
    yield database
    database.close()


def rejected(db, data, error: str, **options) -> str:
    """Transact ``data``, expect the named error and no change at all; return the message."""
    before = core_rows_of(db.connection)
    with pytest.raises(fgraph.FgraphError) as caught:
        db.transact(data, **options)
    assert caught.value.name == error, str(caught.value)
    assert core_rows_of(db.connection) == before
    return caught.value.message


# -- declarations ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["bool", "int", "float", "text", "instant", "bytes", "ref"])
def test_unique_with_a_scalar_type_is_accepted(db, kind):
    report = db.transact({"id": "q/key", "fgraph/type": kind, "fgraph/unique": True})
    assert [(f["a"], f["v"]) for f in report["asserted"][1:]] == [("fgraph/type", kind), ("fgraph/unique", True)]


@pytest.mark.parametrize("declaration", [
    {"fgraph/unique": True},
    {"fgraph/unique": True, "fgraph/type": "json"},
    {"fgraph/unique": True, "fgraph/type": "vector"},
])
def test_unique_needs_a_scalar_type(db, declaration):
    message = rejected(db, {"id": "q/key", **declaration}, "SchemaError")
    assert "'q/key' cannot be unique" in message


def test_unique_loses_its_type_later(db):
    db.transact({"id": "q/key", "fgraph/type": "text", "fgraph/unique": True})
    rejected(db, ["retract", "q/key", "fgraph/type"], "SchemaError")
    rejected(db, {"id": "q/key", "fgraph/type": "json"}, "SchemaError")
    # dropping uniqueness first makes both legal
    db.transact([["retract", "q/key", "fgraph/unique"], {"id": "q/key", "fgraph/type": "json"}])
    assert db.entity("q/key") == {"fgraph/type": "json"}


@pytest.mark.parametrize("kind", ["decimal", "string", "Text", "", "refs"])
def test_unknown_types(db, kind):
    message = rejected(db, {"id": "q/a", "fgraph/type": kind}, "SchemaError")
    assert message == f"unknown type {kind!r} for 'q/a'"


@pytest.mark.parametrize("declaration", [
    {"fgraph/dims": 3},
    {"fgraph/dims": 3, "fgraph/type": "int"},
    {"fgraph/dims": 0, "fgraph/type": "vector"},
    {"fgraph/dims": -2, "fgraph/type": "vector"},
    {"fgraph/vector-model": "m"},
    {"fgraph/vector-model": "m", "fgraph/type": "text"},
])
def test_vector_only_declarations(db, declaration):
    rejected(db, {"id": "q/vec", **declaration}, "SchemaError")


def test_vector_declarations_that_hold(db):
    db.transact({"id": "q/vec", "fgraph/type": "vector", "fgraph/dims": 2, "fgraph/vector-model": "m"})
    db.transact({"id": "e", "q/vec": {"vector": [0.5, -1.0]}})
    assert db.entity("e") == {"q/vec": {"vector": [0.5, -1.0]}}


# -- types ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, good, bad", [
    ("int", 1, "one"),
    ("int", -5, 1.5),
    ("float", 1.5, 2),
    ("text", LONG, 3),
    ("bool", False, 0),
    ("instant", {"instant": "2026-01-01T00:00:00Z"}, "2026-01-01T00:00:00Z"),
    ("bytes", {"bytes": "AAEC"}, "AAEC"),
    ("json", {"json": [1, 2]}, 7),
    ("ref", {"ref": "target"}, "target"),
])
def test_a_value_against_a_known_type(db, kind, good, bad):
    db.transact({"id": "q/v", "fgraph/type": kind})
    db.transact({"id": "e", "q/v": good})
    # the type is known before the value is planned: TypeError, in a later or in the same request
    rejected(db, {"id": "e2", "q/v": bad}, "TypeError")
    rejected(db, [{"id": "q/w", "fgraph/type": kind}, {"id": "e2", "q/w": bad}], "TypeError")


def test_a_type_declared_after_a_wrong_value_in_the_same_request(db):
    message = rejected(db, [{"id": "e", "q/n": "five"}, {"id": "q/n", "fgraph/type": "int"}], "SchemaError")
    assert message == "'q/n' is declared int but holds a text value"
    # in order of the request or reversed, a value that fits commits
    db.transact([{"id": "e", "q/n": 5}, {"id": "q/n", "fgraph/type": "int"}])
    assert db.entity("e") == {"q/n": 5}


def test_a_type_declared_over_existing_values(db):
    db.transact({"id": "e", "q/n": "five", "q/t": LONG, "q/b": {"bytes": "AA=="}})
    message = rejected(db, {"id": "q/n", "fgraph/type": "int"}, "SchemaError")
    assert message == "'q/n' already holds values that are not int"
    db.transact({"id": "q/t", "fgraph/type": "text"})            # long text (tag 8) is text too
    db.transact({"id": "q/b", "fgraph/type": "bytes"})
    # replacing the wrong value in the same request as the declaration is fine
    db.transact([{"id": "q/n", "fgraph/type": "int"}, {"id": "e", "q/n": 5}])
    assert db.entity("e") == {"q/b": {"bytes": "AA=="}, "q/n": 5, "q/t": LONG}


def test_retracted_values_do_not_count_against_a_new_type(db):
    db.transact({"id": "e", "q/n": "five"})
    db.retract("e", "q/n")
    db.transact({"id": "q/n", "fgraph/type": "int"})
    assert db.entity("q/n") == {"fgraph/type": "int"}


# -- cardinality ----------------------------------------------------------------------------------

def test_two_values_for_cardinality_one_in_one_request(db):
    rejected(db, [{"id": "e", "q/c": 1}, {"id": "e", "q/c": 2}], "Conflict")
    rejected(db, [["assert", "e", "q/c", 1], ["assert", "e", "q/c", 2]], "Conflict")
    rejected(db, {"id": "e", "q/c": [1, 2]}, "Conflict")
    db.transact({"id": "e", "q/c": 1})
    report = db.transact({"id": "e", "q/c": 2})                   # one new value replaces the live one
    assert [(f["v"], f["rx"]) for f in report["retracted"]] == [(1, report["tx"])]
    assert db.entity("e") == {"q/c": 2}


def test_cardinality_one_declared_while_values_are_pending(db):
    db.transact({"id": "q/m", "fgraph/many": True})
    message = rejected(db, [{"id": "e", "q/m": [1, 2]}, {"id": "q/m", "fgraph/many": False}], "Conflict")
    assert message == "two values for cardinality-one attribute 'q/m' in one transaction"
    rejected(db, [{"id": "e", "q/m": [1, 2]}, ["retract", "q/m", "fgraph/many"]], "Conflict")


def test_cardinality_one_declared_while_an_entity_holds_several(db):
    db.transact([{"id": "q/m", "fgraph/many": True}, {"id": "e", "q/m": [1, 2]}, {"id": "f", "q/m": [3]}])
    message = rejected(db, {"id": "q/m", "fgraph/many": False}, "SchemaError")
    assert message == "'q/m' cannot become cardinality-one while an entity holds several values"
    rejected(db, ["retract", "q/m", "fgraph/many"], "SchemaError")
    # retracting the extra value in the same request makes it legal
    db.transact([["retract", "e", "q/m", 2], {"id": "q/m", "fgraph/many": False}])
    assert (db.entity("e"), db.entity("f")) == ({"q/m": 1}, {"q/m": 3})


# -- uniqueness -----------------------------------------------------------------------------------

@pytest.fixture
def keyed(db):
    db.transact({"id": "q/key", "fgraph/type": "text", "fgraph/unique": True})
    db.transact({"id": "owner", "q/key": "k1"})
    return db


def test_unique_collision_with_a_live_owner(keyed):
    message = rejected(keyed, {"id": "other", "q/key": "k1"}, "Conflict")
    assert message == "map id 'other' pins another entity than the owner of its unique q/key value 'k1'"
    rejected(keyed, ["assert", "other", "q/key", "k1"], "Conflict")


def test_unique_collision_inside_one_request(keyed):
    rejected(keyed, [{"id": "a", "q/key": "k2"}, {"id": "b", "q/key": "k2"}], "Conflict")
    rejected(keyed, [["assert", "a", "q/key", "k2"], ["assert", {"tmp": "t"}, "q/key", "k2"]], "Conflict")


def test_a_pinned_map_cannot_take_a_value_released_in_the_same_request(keyed):
    # Published behaviour (checked with refpeer; case transact/pinned-unique): the owner is
    # the committed one, whatever the request does to it first. Two requests move the value.
    rejected(keyed, [["retract", "owner", "q/key", "k1"], {"id": "other", "q/key": "k1"}], "Conflict")
    keyed.transact(["retract", "owner", "q/key", "k1"])
    keyed.transact({"id": "other", "q/key": "k1"})
    assert keyed.entity("owner") == {}
    assert keyed.entity("other") == {"q/key": "k1"}


def test_a_map_without_id_upserts_instead_of_colliding(keyed):
    report = keyed.transact({"q/key": "k1", "q/age": 3})
    assert report["ids"] == {}
    assert keyed.entity("owner") == {"q/age": 3, "q/key": "k1"}


def test_unique_long_text_collides_too(db):
    db.transact({"id": "q/key", "fgraph/type": "text", "fgraph/unique": True})
    db.transact({"id": "owner", "q/key": LONG})
    rejected(db, {"id": "other", "q/key": LONG}, "Conflict")
    db.transact({"id": "other", "q/key": LONG + "!"})


def test_unique_refs_to_one_new_identity_collide(db):
    db.transact({"id": "q/r", "fgraph/type": "ref", "fgraph/unique": True})
    rejected(db, [{"id": "a", "q/r": {"ref": "new"}}, {"id": "b", "q/r": {"ref": "new"}}], "Conflict")
    rejected(db, [{"id": "a", "q/r": {"ref": {"tmp": "t"}}}, {"id": "b", "q/r": {"ref": {"tmp": "t"}}}], "Conflict")
    db.transact({"id": "a", "q/r": {"ref": "target"}})
    rejected(db, {"id": "b", "q/r": {"ref": "target"}}, "Conflict")


def test_unique_declared_over_duplicate_values(db):
    db.transact([{"id": "a", "q/key": "same"}, {"id": "b", "q/key": "same"}])
    message = rejected(db, {"id": "q/key", "fgraph/type": "text", "fgraph/unique": True}, "SchemaError")
    assert message == "'q/key' cannot become unique: value 'same' has several owners"
    db.transact([["retract", "b", "q/key"], {"id": "q/key", "fgraph/type": "text", "fgraph/unique": True}])
    assert db.entity(["q/key", "same"]) == {"q/key": "same"}


# -- shapes ---------------------------------------------------------------------------------------

@pytest.fixture
def shaped(db):
    db.declare("p/friend", ref=True)
    db.transact([
        {"id": "person", "fgraph/shape-required": [{"ref": "p/name"}], "fgraph/shape-allowed": [{"ref": "p/age"}],
         "fgraph/shape-closed": True},
        {"id": "open", "fgraph/shape-required": [{"ref": "p/name"}, {"ref": "p/friend"}]},
    ])
    return db


def test_required_attribute_must_be_present(shaped):
    message = rejected(shaped, {"id": "x", "fgraph/shape": {"ref": "person"}, "p/age": 3}, "SchemaError")
    assert message == "entity is missing attribute 'p/name' required by its shape"
    shaped.transact({"id": "x", "fgraph/shape": {"ref": "person"}, "p/name": "X"})
    rejected(shaped, ["retract", "x", "p/name"], "SchemaError")
    shaped.transact({"id": "x", "p/name": "X2"})                 # replacing keeps it present
    assert shaped.entity("x") == {"fgraph/shape": {"ref": "person"}, "p/name": "X2"}


def test_required_holds_on_the_final_state_regardless_of_order(shaped):
    shaped.transact([{"id": "x", "fgraph/shape": {"ref": "open"}},
                     {"id": "x", "p/friend": {"ref": "y"}},
                     ["assert", "x", "p/name", "X"]])
    assert shaped.entity("x") == {"fgraph/shape": {"ref": "open"}, "p/friend": {"ref": "y"}, "p/name": "X"}


def test_retracting_a_ref_target_can_break_the_holders_shape(shaped):
    shaped.transact({"id": "x", "fgraph/shape": {"ref": "open"}, "p/name": "X", "p/friend": {"ref": "y"}})
    rejected(shaped, ["retract", "y"], "SchemaError")
    shaped.transact([["retract", "y"], {"id": "x", "p/friend": {"ref": "z"}}])
    assert shaped.entity("x")["p/friend"] == {"ref": "z"}


def test_closed_shape_allows_only_required_allowed_and_system_attributes(shaped):
    shaped.transact({"id": "x", "fgraph/shape": {"ref": "person"}, "p/name": "X", "p/age": 3,
                     "fgraph/doc": "system attributes are always allowed"}, by="me", tx={"t/tag": 1})
    message = rejected(shaped, {"id": "x", "p/other": 1}, "SchemaError")
    assert message == "attribute 'p/other' is not allowed by the closed shape"
    rejected(shaped, {"id": "y", "fgraph/shape": {"ref": "person"}, "p/name": "Y", "p/other": 1}, "SchemaError")
    # an entity already holding p/other cannot take on the closed shape
    shaped.transact({"id": "z", "p/name": "Z", "p/other": 5})
    rejected(shaped, {"id": "z", "fgraph/shape": {"ref": "person"}}, "SchemaError")
    # …unless the extra attribute goes in the same request
    shaped.transact([{"id": "z", "fgraph/shape": {"ref": "person"}}, ["retract", "z", "p/other"]])
    assert shaped.entity("z") == {"fgraph/shape": {"ref": "person"}, "p/name": "Z"}


def test_an_open_shape_allows_anything_extra(shaped):
    shaped.transact({"id": "x", "fgraph/shape": {"ref": "open"}, "p/name": "X", "p/friend": {"ref": "y"},
                     "p/other": 1})
    assert shaped.entity("x")["p/other"] == 1


def test_entities_without_a_shape_are_free(shaped):
    shaped.transact({"id": "y", "p/other": 1})
    shaped.transact(["retract", "y", "p/other"])
    assert shaped.entity("y") == {}


def test_shape_and_its_requirement_in_one_request(db):
    rejected(db, [{"id": "w", "fgraph/shape": {"ref": "s"}, "p/n": 1},
                  {"id": "s", "fgraph/shape-required": [{"ref": "p/m"}]}], "SchemaError")
    db.transact([{"id": "w", "fgraph/shape": {"ref": "s"}, "p/n": 1, "p/m": 2},
                 {"id": "s", "fgraph/shape-required": [{"ref": "p/m"}]}])
    assert db.entity("w") == {"fgraph/shape": {"ref": "s"}, "p/m": 2, "p/n": 1}


def test_retracting_the_whole_entity_drops_its_shape_too(shaped):
    shaped.transact({"id": "x", "fgraph/shape": {"ref": "person"}, "p/name": "X"})
    shaped.transact(["retract", "x"])
    assert shaped.entity("x") == {}


def test_a_failed_check_does_not_consume_the_clock(shaped):
    latest = shaped.receipt(shaped.latest_tx())["at"]
    rejected(shaped, {"id": "x", "fgraph/shape": {"ref": "person"}}, "SchemaError")
    rejected(shaped, [{"id": "e", "q/c": 1}, {"id": "e", "q/c": 2}], "Conflict")
    assert shaped.transact({"id": "e", "q/c": 1})["at"] == latest + 1_000_000


def test_a_changed_shape_checks_every_entity_assigned_to_it():
    """Spec 13 §13.2, found by the schema cases: tightening a shape must not leave assigned entities invalid."""
    import fgraph
    with fgraph.connect(":memory:") as db:
        db.declare_shape("shape/p", required=["p/id"])
        db.transact({"id": "p1", "fgraph/shape": {"ref": "shape/p"}, "p/id": "P1"})
        with pytest.raises(fgraph.SchemaError):
            db.declare_shape("shape/p", required=["p/id", "p/owner"])
        with pytest.raises(fgraph.SchemaError):
            db.transact({"id": "shape/p", "fgraph/shape-required": [{"ref": "p/owner"}]})
        db.declare_shape("shape/p", required=["p/id"], closed=True)
        assert db.validate("p1")["valid"]
