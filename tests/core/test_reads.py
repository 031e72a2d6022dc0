"""Proves the read APIs (spec 09 §5–§6, 03 §13): entity with depth, history, why, diff, receipt and
stats give the exact documented shapes, at the latest basis and in historical views resolved by
transaction id, instant or RFC 3339 time."""

from __future__ import annotations

import hashlib
import os

import pytest

import fgraph
from fgraph.core.identity import GENESIS_EVENT, seeded_event_uuid
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED
from tests.support.stores import seeded_db

SECOND = 1_000_000
T0 = CONFORMANCE_CLOCK          # genesis time


def at(seconds: int) -> dict:
    return {"instant": f"2026-01-01T00:00:{seconds:02d}.000000Z"}


@pytest.fixture
def db():
    """p/knows 65 @66; ada 67, p/born 68, bob 69, p/name 70 @71; cy 72, audit/tag 73 @74; @75."""
    database = seeded_db()
    txs = [
        database.declare("p/knows", ref=True, many=True)["tx"],
        database.transact({"id": "ada", "p/name": "Ada", "p/born": 1815, "p/knows": [{"ref": "bob"}]})["tx"],
        database.transact({"id": "bob", "p/name": "Bob", "p/knows": [{"ref": "ada"}, {"ref": "cy"}]},
                          by="me", source="notes", meta={"k": 1}, tx={"audit/tag": "v1"})["tx"],
        database.transact({"id": "ada", "p/born": 1816})["tx"],
    ]
    assert txs == [66, 71, 74, 75]
    yield database
    database.close()


# -- entity ---------------------------------------------------------------------------------------

ADA = {"p/born": 1816, "p/knows": [{"ref": "bob"}], "p/name": "Ada"}
BOB_FLAT = {"p/knows": [{"ref": "ada"}, {"ref": "cy"}], "p/name": "Bob"}


@pytest.mark.parametrize("depth, expected", [
    (0, ADA),
    (1, ADA),
    (2, {"p/born": 1816, "p/knows": [BOB_FLAT], "p/name": "Ada"}),
    # at 3 bob's refs are pulled too, except ada, who is already on the path; cy has no facts
    (3, {"p/born": 1816, "p/knows": [{"p/knows": [{"ref": "ada"}, {}], "p/name": "Bob"}], "p/name": "Ada"}),
    (50, {"p/born": 1816, "p/knows": [{"p/knows": [{"ref": "ada"}, {}], "p/name": "Bob"}], "p/name": "Ada"}),
])
def test_entity_depth(db, depth, expected):
    assert db.entity("ada", depth) == expected


def test_entity_of_other_identities(db):
    assert db.entity("cy") == {}                                       # exists, holds nothing
    assert db.entity(67) == ADA                                         # by id
    assert db.entity(64) == {"fgraph/at": at(0)}                        # genesis, a transaction
    assert db.entity(74) == {"audit/tag": "v1", "fgraph/at": at(3), "fgraph/by": "me",
                             "fgraph/meta": {"json": {"k": 1}}, "fgraph/source": "notes"}
    assert db.entity("p/knows") == {"fgraph/many": True, "fgraph/type": "ref"}
    assert db.entity("fgraph/undoes")["fgraph/type"] == "ref"


def test_entity_refers_to_itself_without_recursing(db):
    db.transact({"id": "selfish", "p/knows": [{"ref": "selfish"}], "p/name": "S"})
    assert db.entity("selfish", 5) == {"p/knows": [{"ref": "selfish"}], "p/name": "S"}


@pytest.mark.parametrize("depth", [-1, True, 1.5, "2", None])
def test_entity_bad_depth_is_query_error(db, depth):
    with pytest.raises(fgraph.QueryError):
        db.entity("ada", depth)


@pytest.mark.parametrize("ref, error", [
    ("nobody", "NotFound"),
    ("\ud800", "NotFound"),
    (0, "NotFound"),
    (-3, "NotFound"),
    (9999, "NotFound"),
    (2**63 - 1, "NotFound"),
    (2**63, "TypeError"),
    (True, "TypeError"),
    (1.5, "TypeError"),
    (None, "TypeError"),
    ({"x": 1}, "TypeError"),
    ({"eid": "not-a-uuid"}, "TypeError"),
    ({"eid": "4fdae471-2e64-57b7-bc98-bcc828aa539c"}, "NotFound"),
    (["p/name", "Ada"], "SchemaError"),          # lookups need a unique attribute
    (["p/nothing", "Ada"], "NotFound"),
])
def test_entity_selector_errors(db, ref, error):
    with pytest.raises(fgraph.FgraphError) as caught:
        db.entity(ref)
    assert caught.value.name == error


def test_entity_by_eid_and_by_lookup(db):
    db.declare("p/email", type="text", unique=True)
    report = db.transact([{"id": {"tmp": "t"}, "p/email": "anon@x"}, {"id": "ada", "p/email": "ada@x"}])
    [eid_record] = db.event_records(report["tx"] - 1)[-1]["created"][:1]
    assert db.entity(eid_record) == {"p/email": "anon@x"}
    assert db.entity(["p/email", "ada@x"]) == {**ADA, "p/email": "ada@x"}
    assert db.entity({"eid": db.receipt(74)["event"]})["fgraph/by"] == "me"
    with pytest.raises(fgraph.NotFound):
        db.entity(["p/email", "nobody@x"])
    with pytest.raises(fgraph.NotFound):                    # not yet owned at an earlier basis
        db.at(75).entity(["p/email", "ada@x"])


def test_entity_uses_the_schema_visible_at_the_basis(db):
    first = db.transact({"id": "e", "p/tag": "x"})["tx"]
    made_many = db.declare("p/tag", many=True)["tx"]
    db.transact({"id": "e", "p/tag": "y"})
    assert db.at(first).entity("e") == {"p/tag": "x"}
    assert db.at(made_many).entity("e") == {"p/tag": ["x"]}
    assert db.entity("e") == {"p/tag": ["x", "y"]}


# -- history and why ------------------------------------------------------------------------------

BORN_1815 = {"a": "p/born", "at": T0 + 2 * SECOND, "e": "ada", "id": 44, "rx": 75, "rx_at": T0 + 4 * SECOND,
             "tx": 71, "v": 1815}
BORN_1816 = {"a": "p/born", "at": T0 + 4 * SECOND, "e": "ada", "id": 56, "rx": None, "tx": 75, "v": 1816}


def test_history_of_one_attribute(db):
    assert db.history("ada", "p/born") == [BORN_1815, BORN_1816]


def test_history_of_an_entity_in_fact_order(db):
    assert [(f["id"], f["a"]) for f in db.history("ada")] == [(44, "p/born"), (45, "p/knows"), (46, "p/name"),
                                                            (56, "p/born")]
    assert db.history("cy") == []
    assert db.history("bob", "p/born") == []


def test_history_carries_by_and_source_of_both_transactions(db):
    db.transact({"id": "bob", "p/name": "Robert"}, by="you", source="call")
    name, renamed = db.history("bob", "p/name")
    assert name == {"a": "p/name", "at": T0 + 3 * SECOND, "by": "me", "e": "bob", "id": 53, "rx": 76,
                    "rx_at": T0 + 5 * SECOND, "rx_by": "you", "rx_source": "call", "source": "notes", "tx": 74,
                    "v": "Bob"}
    assert renamed == {"a": "p/name", "at": T0 + 5 * SECOND, "by": "you", "e": "bob", "id": 60, "rx": None,
                       "source": "call", "tx": 76, "v": "Robert"}


def test_history_renders_long_by_and_source_as_text(db):
    by, source = "b" * 300, "s" * 257
    db.transact({"id": "dee", "p/name": "Dee"}, by=by, source=source)
    [fact] = db.history("dee")
    assert (fact["by"], fact["source"]) == (by, source)


def test_receipt_and_why_render_long_by_and_source_as_text(db):
    by, source = "b" * 300, "s" * 257
    tx = db.transact({"id": "dee", "p/name": "Dee"}, by=by, source=source)["tx"]
    receipt = db.receipt(tx)
    assert (receipt["by"], receipt["source"]) == (by, source)
    [fact] = db.why("dee")
    assert fact["provenance"] == {"fgraph/at": at(5), "fgraph/by": by, "fgraph/source": source}


def test_history_in_a_view_hides_later_retractions(db):
    assert db.at(74).history("ada", "p/born") == [
        {"a": "p/born", "at": T0 + 2 * SECOND, "e": "ada", "id": 44, "rx": None, "tx": 71, "v": 1815}]
    assert db.at(66).history("p/knows") == [
        {"a": "fgraph/many", "at": T0 + SECOND, "e": "p/knows", "id": 41, "rx": None, "tx": 66, "v": True},
        {"a": "fgraph/type", "at": T0 + SECOND, "e": "p/knows", "id": 42, "rx": None, "tx": 66, "v": "ref"}]
    with pytest.raises(fgraph.NotFound):
        db.at(66).history("ada")                          # ada did not exist yet


@pytest.mark.parametrize("attr", ["p/nothing", "bad", 5, "fgraph/other"])
def test_history_and_why_unknown_attribute(db, attr):
    with pytest.raises(fgraph.NotFound):
        db.history("ada", attr)
    with pytest.raises(fgraph.NotFound):
        db.why("ada", attr)


def test_why_with_provenance(db):
    assert db.why("ada", "p/born") == [
        {"a": "p/born", "e": "ada", "id": 56, "provenance": {"fgraph/at": at(4)}, "rx": None, "tx": 75, "v": 1816}]
    provenance = {"audit/tag": "v1", "fgraph/at": at(3), "fgraph/by": "me", "fgraph/meta": {"json": {"k": 1}},
                  "fgraph/source": "notes"}
    assert db.why("bob") == [
        {"a": "p/knows", "e": "bob", "id": 51, "provenance": provenance, "rx": None, "tx": 74, "v": {"ref": "ada"}},
        {"a": "p/knows", "e": "bob", "id": 52, "provenance": provenance, "rx": None, "tx": 74, "v": {"ref": "cy"}},
        {"a": "p/name", "e": "bob", "id": 53, "provenance": provenance, "rx": None, "tx": 74, "v": "Bob"}]


def test_why_orders_by_attribute_then_fact(db):
    # p/knows is id 65, p/born 68, p/name 70: attribute order differs from fact order
    assert [f["id"] for f in db.why("ada")] == [45, 56, 46]
    assert [f["id"] for f in db.at(74).why("ada")] == [45, 44, 46]
    assert db.why("cy") == []


# -- diff -----------------------------------------------------------------------------------------

def fact(fact_id, e, a, v, tx, rx=None):
    return {"a": a, "e": e, "id": fact_id, "rx": rx, "tx": tx, "v": v}


def test_diff_window(db):
    assert db.diff(74, 75) == {
        "asserted": [fact(55, 75, "fgraph/at", at(4), 75), fact(56, "ada", "p/born", 1816, 75)],
        "retracted": [fact(44, "ada", "p/born", 1815, 71, rx=75)]}
    wide = db.diff(64, 75)
    assert [f["id"] for f in wide["asserted"]] == list(range(40, 57))
    assert [f["id"] for f in wide["retracted"]] == [44]


@pytest.mark.parametrize("t1, t2", [
    (74, 75),
    (T0 + 3 * SECOND, T0 + 4 * SECOND),                          # instants on the receipts
    (T0 + 3 * SECOND + 999_999, T0 + 10**6 * SECOND),            # instants between and after
    ("2026-01-01T00:00:03Z", "2026-01-01T00:00:04Z"),
    ("74", "75"),
])
def test_diff_resolves_times_like_at(db, t1, t2):
    assert [f["id"] for f in db.diff(t1, t2)["asserted"]] == [55, 56]


def test_diff_empty_backwards_and_before_genesis(db):
    assert db.diff(75, 75) == {"asserted": [], "retracted": []}
    with pytest.raises(fgraph.QueryError):
        db.diff(75, 74)
    with pytest.raises(fgraph.NotFound):
        db.diff(T0 - 1, 75)
    with pytest.raises(fgraph.NotFound):
        db.diff(65, 75)                         # 65 is no transaction: an instant before genesis


def test_diff_and_changes_in_a_view_stop_at_its_basis(db):
    view = db.at(71)
    assert [f["id"] for f in view.diff(66, 75)["asserted"]] == [43, 44, 45, 46]
    assert view.diff(66, 75)["retracted"] == []
    assert db.changes(74) == db.diff(74, 75)
    assert view.changes(66) == view.diff(66, 71)
    assert db.changes(71, 74) == db.diff(71, 74)


# -- receipt ----------------------------------------------------------------------------------------

def event_hash(db, tx) -> str:
    [line] = list(db.iter_events(tx - 1, tx))
    return "sha256:" + hashlib.sha256(line.encode("utf-8")).hexdigest()


def test_receipt_of_a_transaction_with_metadata(db):
    assert db.receipt(74) == {
        "at": T0 + 3 * SECOND, "basis_tx": 71, "by": "me", "event": seeded_event_uuid(CONFORMANCE_SEED, 74),
        "event_hash": event_hash(db, 74),
        "facts": [fact(54, 74, "audit/tag", "v1", 74)], "meta": {"k": 1}, "operation_id": None,
        "read_basis_tx": 75, "request_hash": None, "source": "notes", "tx": 74}


def test_receipt_of_genesis_and_of_a_plain_write(db):
    genesis = db.receipt(64)
    assert (genesis["basis_tx"], genesis["event"], genesis["at"], genesis["facts"]) == (64, GENESIS_EVENT, T0, [])
    plain = db.at(71).receipt(66)
    assert plain == {"at": T0 + SECOND, "basis_tx": 64, "event": "36645192-43ad-4d65-b540-188299d1bde4",
                     "event_hash": event_hash(db, 66), "facts": [], "operation_id": None, "read_basis_tx": 71,
                     "request_hash": None, "tx": 66}


def test_receipt_with_operation_id_and_null_meta(db):
    report = db.transact({"id": "counter", "counter/value": 1}, operation_id="op-1", meta=None)
    receipt = db.receipt(report["tx"])
    assert receipt["meta"] is None and "meta" in receipt
    assert receipt["operation_id"] == "op-1"
    # a supplied meta: null is hashed (03 §10), so this is not the bare-data vector cdedfef1…
    assert receipt["request_hash"] == "sha256:" + hashlib.sha256(
        b'{"data":{"counter/value":1,"id":"counter"},"options":{"meta":null}}').hexdigest()
    other = db.transact({"id": "counter", "counter/value": 2}, operation_id="op-2")
    assert db.receipt(other["tx"])["request_hash"] == \
        "sha256:" + hashlib.sha256(b'{"data":{"counter/value":2,"id":"counter"},"options":{}}').hexdigest()


@pytest.mark.parametrize("tx, error", [
    (65, "NotFound"), (67, "NotFound"), (0, "NotFound"), (-1, "NotFound"), (63, "NotFound"), (9999, "NotFound"),
    (True, "TypeError"), ("74", "TypeError"), (74.0, "TypeError"), (2**63, "TypeError"),
])
def test_receipt_errors(db, tx, error):
    with pytest.raises(fgraph.FgraphError) as caught:
        db.receipt(tx)
    assert caught.value.name == error


def test_receipt_after_the_views_basis_is_not_found(db):
    with pytest.raises(fgraph.NotFound):
        db.at(71).receipt(74)


# -- stats ----------------------------------------------------------------------------------------

def stats(**counts):
    return {"application_id": 1718055521, "format_version": 2, "size": 0, "blobs": 0, **counts}


@pytest.mark.parametrize("basis, expected", [
    (64, stats(attributes=18, entities=18, facts=39, live_facts=39, transactions=1)),
    (66, stats(attributes=19, entities=19, facts=42, live_facts=42, transactions=2)),
    (71, stats(attributes=21, entities=23, facts=46, live_facts=46, transactions=3)),
    (74, stats(attributes=22, entities=25, facts=54, live_facts=54, transactions=4)),
    (75, stats(attributes=22, entities=25, facts=56, live_facts=55, transactions=5)),
])
def test_stats_at_each_basis(db, basis, expected):
    assert db.at(basis).stats() == expected
    if basis == 75:
        assert db.stats() == expected


def test_stats_counts_blobs_and_file_size(tmp_path):
    path = tmp_path / "s.fgraph"
    with seeded_db(path) as db:
        db.transact({"id": "a", "p/bio": "x" * 300, "p/raw": {"bytes": "AAAA" * 100}, "p/v": {"vector": [1.0]}})
        db.transact({"id": "b", "p/bio": "x" * 300})                # shares the blob
        db.transact({"id": "a", "p/bio": "short"})                  # retracted rows still count
        counts = db.stats()
        assert counts["blobs"] == 3
        assert counts["size"] == os.path.getsize(path) > 0
        assert db.at(64).stats()["blobs"] == 0


# -- time resolution and views ----------------------------------------------------------------------

@pytest.mark.parametrize("value, basis", [
    (64, 64), (66, 66), (71, 71), (75, 75),
    ("71", 71), ("0071", 71),
    (T0, 64), (T0 + SECOND - 1, 64), (T0 + SECOND, 66), (T0 + 2 * SECOND + 1, 71), (T0 + 10**9 * SECOND, 75),
    ("2026-01-01T00:00:02Z", 71), ("2026-01-01T00:00:02.999999Z", 71), ("2026-01-01T01:00:03+01:00", 74),
    ("9999-12-31T23:59:59Z", 75),
])
def test_at_resolution(db, value, basis):
    assert db.at(value).latest_tx() == basis


@pytest.mark.parametrize("value, error", [
    (65, "NotFound"),                 # an identity but no transaction: an instant before genesis
    (0, "NotFound"),
    (-1, "NotFound"),
    (T0 - 1, "NotFound"),
    ("00000000-0000-4000-8000-000000000099", "NotFound"),  # no event of this store
    (2**63 - 1, "TypeError"),         # neither a transaction nor an instant in the domain
    (-(2**63), "TypeError"),
    (2**63, "TypeError"),
    (True, "TypeError"),
    (1.5, "TypeError"),
    (None, "TypeError"),
    ("yesterday", "TypeError"),
])
def test_at_resolution_errors(db, value, error):
    with pytest.raises(fgraph.FgraphError) as caught:
        db.at(value)
    assert caught.value.name == error


def test_a_view_never_sees_past_its_own_basis(db):
    view = db.at(71)
    assert view.at(75).latest_tx() == 71
    assert view.at(66).latest_tx() == 66
    assert view.entity("ada") == {"p/born": 1815, "p/knows": [{"ref": "bob"}], "p/name": "Ada"}
    with pytest.raises(fgraph.NotFound):
        view.entity("cy")
    db.transact({"id": "ada", "p/name": "Ada L"})
    assert view.entity("ada")["p/name"] == "Ada"          # a pinned view ignores later commits
    assert db.entity("ada")["p/name"] == "Ada L"


@pytest.mark.parametrize("write", [
    lambda v: v.transact({"id": "x", "x/v": 1}),
    lambda v: v.declare("x/v", type="int"),
    lambda v: v.retract("ada"),
    lambda v: v.undo(71),
    lambda v: v.excise("ada", operation_id="x", if_basis_tx=75),
])
def test_a_view_is_read_only(db, write):
    with pytest.raises(fgraph.ReadOnly):
        write(db.at(71))
    assert db.latest_tx() == 75


def test_a_past_view_says_the_entity_came_later(db):
    with pytest.raises(fgraph.NotFound, match=r"'bob' was not found as of transaction 66; it was created later"):
        db.at(66).entity("bob")
    with pytest.raises(fgraph.NotFound, match=r"'nobody' was not found; check the name"):
        db.at(66).entity("nobody")   # not in any view: the plain advice
    assert db.at(74).entity("bob")["p/name"] == "Bob"
