"""Proves undo (spec 07 §3): the audited inverse of a transaction, planned with ordinary semantics,
always committed with fgraph/undoes; undoing an undo; typed errors that leave the database unchanged."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.core.identity import seeded_event_uuid
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED
from tests.support.stores import seeded_db
from tests.support.corerows import core_rows_of

SECOND = 1_000_000


def fact(fact_id, e, a, v, tx, rx=None):
    return {"a": a, "e": e, "id": fact_id, "rx": rx, "tx": tx, "v": v}


def receipt_fact(fact_id, tx, seconds):
    return fact(fact_id, tx, "fgraph/at", {"instant": f"2026-01-01T00:00:{seconds:02d}.000000Z"}, tx)


@pytest.fixture
def db():
    database = seeded_db()
    yield database
    database.close()


@pytest.fixture
def history(db):
    """1 → 2 at tx 70 (which also adds n/x), 3 at tx 71: the example of spec 07 §3."""
    assert db.transact({"id": "a", "n/v": 1, "n/w": "keep"})["tx"] == 68
    assert db.transact({"id": "a", "n/v": 2, "n/x": "new"})["tx"] == 70
    assert db.transact({"id": "a", "n/v": 3})["tx"] == 71
    return db


def test_undo_restores_what_the_transaction_retracted_and_retracts_what_it_asserted(history):
    report = history.undo(70)
    assert report == {
        "asserted": [receipt_fact(48, 72, 4), fact(49, "a", "n/v", 1, 72), fact(50, 72, "fgraph/undoes", {"ref": 70}, 72)],
        "at": CONFORMANCE_CLOCK + 4 * SECOND, "basis_tx": 71, "event": seeded_event_uuid(CONFORMANCE_SEED, 72),
        "ids": {},
        # n/x asserted by 70 goes; the re-asserted 1 supersedes the later 3 (cardinality one)
        "retracted": [fact(45, "a", "n/x", "new", 70, rx=72), fact(47, "a", "n/v", 3, 71, rx=72)],
        "status": "applied", "tx": 72}
    assert history.entity("a") == {"n/v": 1, "n/w": "keep"}
    assert [(f["v"], f["tx"], f["rx"]) for f in history.history("a", "n/v")] == [
        (1, 68, 70), (2, 70, 71), (3, 71, 72), (1, 72, None)]


def test_undo_is_audited_in_receipt_and_event(history):
    history.undo(70)
    receipt = history.receipt(72)
    assert receipt["facts"] == [fact(50, 72, "fgraph/undoes", {"ref": 70}, 72)]
    assert (receipt["basis_tx"], receipt["operation_id"], receipt["request_hash"]) == (71, None, None)
    [event] = history.event_records(71)
    assert event == {
        "asserted": [["a", "n/v", 1, "int"]], "at": CONFORMANCE_CLOCK + 4 * SECOND, "created": [],
        "event": seeded_event_uuid(CONFORMANCE_SEED, 72), "fgraph": "event/1",
        "retracted": [["a", "n/x", "new", "text"], ["a", "n/v", 3, "int"]],
        "tx_facts": [["fgraph/undoes", {"ref": {"eid": seeded_event_uuid(CONFORMANCE_SEED, 70)}}, "ref"]]}
    assert history.why("a", "n/v")[0]["provenance"] == {
        "fgraph/at": {"instant": "2026-01-01T00:00:04.000000Z"}, "fgraph/undoes": {"ref": 70}}


def test_undo_of_an_undo_brings_the_state_back(history):
    history.undo(70)
    report = history.undo(72)
    assert [(f["a"], f["v"]) for f in report["asserted"]] == [
        ("fgraph/at", {"instant": "2026-01-01T00:00:05.000000Z"}), ("n/x", "new"), ("n/v", 3),
        ("fgraph/undoes", {"ref": 72})]
    assert report["retracted"] == [fact(49, "a", "n/v", 1, 72, rx=73)]
    assert history.entity("a") == {"n/v": 3, "n/w": "keep", "n/x": "new"}
    # and once more: the undo of the undo of the undo
    history.undo(73)
    assert history.entity("a") == {"n/v": 1, "n/w": "keep"}


def test_undo_always_commits_even_with_an_empty_inverse(history):
    history.undo(71)                                      # 3 goes, 2 comes back
    assert history.entity("a")["n/v"] == 2
    report = history.undo(71)                             # nothing of 71 is live or restorable now
    assert report["status"] == "applied"
    assert report["retracted"] == []
    assert [f["a"] for f in report["asserted"]] == ["fgraph/at", "fgraph/undoes"]
    assert history.entity("a")["n/v"] == 2


def test_undo_of_the_first_write_empties_the_entity_but_keeps_its_name(history):
    report = history.undo(68)
    # 68's n/v 1 was already retracted by 70; only n/w is still live from it
    assert [(f["a"], f["v"]) for f in report["retracted"]] == [("n/w", "keep")]
    assert history.entity("a") == {"n/v": 3, "n/x": "new"}
    fresh = history.transact({"id": "solo", "n/v": 9})
    history.undo(fresh["tx"])
    assert history.entity("solo") == {}                   # the name is permanent, the facts are gone


def test_an_independently_reasserted_value_is_left_alone(db):
    t1 = db.transact({"id": "a", "n/v": 1})["tx"]
    db.retract("a", "n/v", 1)
    again = db.transact({"id": "a", "n/v": 1})["tx"]
    report = db.undo(t1)
    assert report["retracted"] == [] and [f["a"] for f in report["asserted"]] == ["fgraph/at", "fgraph/undoes"]
    assert db.why("a", "n/v")[0]["tx"] == again


def test_undo_of_an_entity_retraction_restores_its_facts_and_the_refs_to_it(db):
    db.declare("p/friend", ref=True)
    db.transact({"id": "a", "p/name": "A"})
    db.transact({"id": "b", "p/friend": {"ref": "a"}})
    gone = db.retract("a")
    assert [f["a"] for f in gone["retracted"]] == ["p/name", "p/friend"]
    assert (db.entity("a"), db.entity("b")) == ({}, {})
    db.undo(gone["tx"])
    assert (db.entity("a"), db.entity("b")) == ({"p/name": "A"}, {"p/friend": {"ref": "a"}})


def test_transaction_facts_of_the_target_stay(db):
    target = db.transact({"id": "a", "n/v": 1}, by="me", source="notes", tx={"audit/tag": "t"})["tx"]
    before = db.receipt(target)
    report = db.undo(target)
    assert [f["a"] for f in report["retracted"]] == ["n/v"]
    assert db.receipt(target) == {**before, "read_basis_tx": report["tx"]}
    assert db.entity(target)["audit/tag"] == "t"


def test_long_text_is_restored_from_its_blob(db):
    long_text = "long text " * 40
    db.transact({"id": "a", "n/t": long_text})
    replaced = db.transact({"id": "a", "n/t": "short"})["tx"]
    report = db.undo(replaced)
    assert [(f["a"], f["v"]) for f in report["asserted"][1:2]] == [("n/t", long_text)]
    assert db.entity("a") == {"n/t": long_text}


def test_nohistory_rows_are_not_restored(db):
    db.declare("n/h", type="text", nohistory=True)
    db.transact({"id": "a", "n/h": "one"})
    replaced = db.transact({"id": "a", "n/h": "two"})["tx"]
    report = db.undo(replaced)
    assert [(f["a"], f["v"]) for f in report["retracted"]] == [("n/h", "two")]
    assert db.entity("a") == {}                   # "one" was deleted at the replacement: nothing to bring back
    assert db.history("a") == []


def test_vector_replacement_undo_leaves_no_vector(db):
    db.transact({"id": "a", "n/vec": {"vector": [1.0, 0.0]}})
    replaced = db.transact({"id": "a", "n/vec": {"vector": [0.0, 1.0]}})["tx"]
    db.undo(replaced)
    assert db.entity("a") == {}


# -- request hash, by, idempotency -------------------------------------------------------------------

@pytest.mark.parametrize("by, digest", [
    (None, "c90132f5c04417b8723a85b07fc2254f2e2727cb8a0ebb47f58f0159a4e3c02d"),
    ("me", "f23175f829fe8ec8ff5a11b90805e98878dd0a5ef51b9971a05a120d76dd787c"),
])
def test_request_hash_vectors(db, by, digest):
    assert db.transact({"id": "a", "x/y": 1})["tx"] == 67
    report = db.undo(67, by=by, operation_id="u")
    receipt = db.receipt(report["tx"])
    assert receipt["request_hash"] == "sha256:" + digest
    assert receipt["operation_id"] == "u"
    assert receipt.get("by") == by
    assert [f["a"] for f in report["asserted"]] == ["fgraph/at"] + (["fgraph/by"] if by else []) + ["fgraph/undoes"]


def test_operation_id_retry_conflict_and_basis(history):
    first = history.undo(70, operation_id="u1", if_basis_tx=71)
    retry = history.undo(70, operation_id="u1", if_basis_tx=64)          # stale basis, still a retry
    assert retry == {"asserted": [], "at": first["at"], "basis_tx": 71, "event": first["event"], "ids": {},
                     "retracted": [], "status": "already_applied", "tx": first["tx"]}
    before = core_rows_of(history.connection)
    with pytest.raises(fgraph.Conflict):
        history.undo(71, operation_id="u1")                               # same id, another target
    with pytest.raises(fgraph.Conflict):
        history.undo(70, by="me", operation_id="u1")                      # same id, another request hash
    with pytest.raises(fgraph.Conflict):
        history.undo(71, if_basis_tx=71)                                  # stale basis
    assert core_rows_of(history.connection) == before
    assert history.undo(71, if_basis_tx=first["tx"])["status"] == "applied"


# -- errors leave everything unchanged -------------------------------------------------------------------

@pytest.mark.parametrize("target, error", [
    (64, "Unsupported"), (1, "Unsupported"), (0, "Unsupported"), (-1, "Unsupported"), (-(2**63), "Unsupported"),
    (65, "NotFound"),          # an entity, not a transaction
    (66, "NotFound"),          # an attribute
    (69, "NotFound"),
    (9999, "NotFound"),
    (2**63 - 1, "NotFound"),
    (2**63, "TypeError"), (-(2**63) - 1, "TypeError"), (True, "TypeError"), ("70", "TypeError"),
    (70.0, "TypeError"), (None, "TypeError"),
])
def test_bad_targets_are_typed_and_change_nothing(history, target, error):
    before = core_rows_of(history.connection)
    with pytest.raises(fgraph.FgraphError) as caught:
        history.undo(target)
    assert caught.value.name == error, str(caught.value)
    assert core_rows_of(history.connection) == before
    # no clock reading was consumed: the next commit is one second after the latest
    assert history.undo(70)["at"] == CONFORMANCE_CLOCK + 4 * SECOND


def test_an_inverse_that_breaks_uniqueness_is_a_conflict(db):
    db.declare("u/key", type="text", unique=True)
    db.transact({"id": "a", "u/key": "k"})
    released = db.retract("a", "u/key")["tx"]
    db.transact({"id": "b", "u/key": "k"})
    before = core_rows_of(db.connection)
    with pytest.raises(fgraph.Conflict):
        db.undo(released)
    assert core_rows_of(db.connection) == before
    assert db.entity(["u/key", "k"]) == {"u/key": "k"} and db.entity("a") == {}


def test_an_inverse_that_breaks_the_schema_is_a_schema_error(db):
    declared = db.declare("m/t", many=True)["tx"]
    db.transact({"id": "a", "m/t": [1, 2]})
    before = core_rows_of(db.connection)
    with pytest.raises(fgraph.SchemaError):
        db.undo(declared)                         # would make m/t cardinality-one under two values
    assert core_rows_of(db.connection) == before


def test_an_inverse_that_breaks_a_shape_is_a_schema_error(db):
    db.transact({"id": "s", "fgraph/shape-required": [{"ref": "p/name"}]})
    db.transact({"id": "x", "fgraph/shape": {"ref": "s"}, "p/name": "X"})
    renamed = db.transact({"id": "x", "p/name": "Y"})["tx"]
    assert db.undo(renamed)["status"] == "applied"          # X comes back: still shaped correctly
    added = db.transact({"id": "y", "p/name": "Y"})["tx"]
    db.transact({"id": "y", "fgraph/shape": {"ref": "s"}})
    before = core_rows_of(db.connection)
    with pytest.raises(fgraph.SchemaError):
        db.undo(added)                                       # would drop p/name from a shaped entity
    assert core_rows_of(db.connection) == before


def test_undo_through_a_view_or_a_read_only_handle_is_read_only(tmp_path):
    path = tmp_path / "u.fgraph"
    with seeded_db(path) as db:
        tx = db.transact({"id": "a", "n/v": 1})["tx"]
        with pytest.raises(fgraph.ReadOnly):
            db.at(tx).undo(tx)
    with fgraph.connect(path, read_only=True) as reader:
        before = core_rows_of(reader.connection)
        with pytest.raises(fgraph.ReadOnly):
            reader.undo(tx)
        assert core_rows_of(reader.connection) == before
