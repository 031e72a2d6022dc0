"""Proves the catalog's indexed lookups: identities by id, name and gid, receipts and time, live facts,
blobs, the basis of a historical view, and an identity cache that stays bounded."""

from __future__ import annotations

import hashlib
import uuid

import pytest

import fgraph
from fgraph.core.catalog import Catalog, IdentityCache
from fgraph.core.identity import GENESIS_EVENT, anonymous_eid
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.stores import seeded_db

SECOND = 1_000_000
LONG_TEXT = "long " * 60   # 300 UTF-8 bytes: stored once in fgraph_blobs, tag 8


@pytest.fixture
def db():
    database = seeded_db()
    yield database
    database.close()


@pytest.fixture
def people(db):
    """A small history; the comments give the ids each transaction allocates."""
    reports = [
        db.declare("p/tags", many=True),                                          # p/tags 65, tx 66
        db.transact({"id": "ada", "p/name": "Ada", "p/tags": ["b", "a", "c"]}),   # ada 67, p/name 68, tx 69
        db.declare("p/friend", ref=True),                                         # p/friend 70, tx 71
        db.transact({"id": "bob", "p/friend": {"ref": "ada"}, "p/bio": LONG_TEXT}),  # bob 72, p/bio 73, tx 74
    ]
    assert [r["tx"] for r in reports] == [66, 69, 71, 74]
    return reports


def test_fresh_catalog_sees_only_genesis(db):
    cat = Catalog(db.connection)
    assert cat.latest_tx() == 64
    assert cat.next_id() == 65
    assert cat.identity(1) == ("fgraph/at", None, 64)
    assert cat.identity(18) == ("fgraph/shape-closed", None, 64)
    assert cat.identity(64) == (None, uuid.UUID(GENESIS_EVENT).bytes, 64)
    assert cat.tx_at(64) == CONFORMANCE_CLOCK
    assert cat.tx_before(64) == 64          # nothing before genesis: genesis itself


@pytest.mark.parametrize("ident", [0, -1, 19, 63, 75, 2**62])
def test_unknown_ids_are_none(db, people, ident):
    cat = Catalog(db.connection)
    assert cat.identity(ident) is None
    assert cat.name_of(ident) is None
    assert cat.gid_of(ident) is None
    assert cat.is_transaction(ident) is False


def test_identities_by_id_name_and_gid(db, people):
    cat = Catalog(db.connection)
    assert cat.identity(67) == ("ada", None, 69)
    assert cat.identity(73) == ("p/bio", None, 74)
    assert cat.id_by_name("ada") == 67
    assert cat.id_by_name("p/friend") == 70
    assert cat.id_by_name("fgraph/undoes") == 12
    assert cat.id_by_name("nobody") is None
    assert cat.id_by_name("Ada") is None             # names are case-sensitive
    assert cat.name_of(72) == "bob"
    assert cat.gid_of(72) is None                    # named identities have no gid
    for report in people:
        gid = uuid.UUID(report["event"]).bytes
        assert cat.identity(report["tx"]) == (None, gid, report["tx"])
        assert cat.gid_of(report["tx"]) == gid
        assert cat.name_of(report["tx"]) is None
        assert cat.id_by_gid(gid) == report["tx"]
    assert cat.id_by_gid(uuid.UUID(GENESIS_EVENT).bytes) == 64
    assert cat.id_by_gid(bytes(16)) is None
    # the seeded event UUID of tx 66 listed in spec 03 §7, found back through its gid
    assert cat.id_by_gid(uuid.UUID("36645192-43ad-4d65-b540-188299d1bde4").bytes) == 66


def test_anonymous_identity_is_found_by_its_gid(db):
    report = db.transact({"id": {"tmp": "t"}, "x/v": 1})
    anon = report["ids"]["t"]
    cat = Catalog(db.connection)
    name, gid, created = cat.identity(anon)
    assert (name, created) == (None, report["tx"])
    assert gid == anonymous_eid(report["event"], 0)       # 03 §7: uuid5 over the ordinal
    assert cat.id_by_gid(gid) == anon
    assert cat.is_transaction(anon) is False


@pytest.mark.parametrize("name", ["\ud800", "a\udfff", "\udc80/x", "ada\ud83d"])
def test_a_lone_surrogate_name_is_simply_absent(db, people, name):
    cache = IdentityCache()
    cat = Catalog(db.connection, cache=cache)
    assert cat.id_by_name(name) is None
    assert cache.by_name == {}                     # nothing was remembered for it
    assert cat.id_by_name("ada") == 67             # the catalog still works afterwards
    with pytest.raises(fgraph.NotFound):
        db.entity(name)


def test_is_transaction(db, people):
    cat = Catalog(db.connection)
    assert [t for t in range(1, 80) if cat.is_transaction(t)] == [64, 66, 69, 71, 74]
    again = Catalog(db.connection, cache=cat.cache)   # answered from the shared cache, same result
    assert [t for t in range(1, 80) if again.is_transaction(t)] == [64, 66, 69, 71, 74]


def test_latest_next_and_previous_transactions(db, people):
    cat = Catalog(db.connection)
    assert cat.latest_tx() == 74
    assert cat.next_id() == 75
    assert [cat.tx_before(t) for t in (64, 66, 69, 71, 74, 75, 9999)] == [64, 64, 66, 69, 71, 74, 74]
    assert cat.tx_before(70) == 69                   # a non-transaction id: the greatest tx below it


def test_tx_at_is_the_self_receipt(db, people):
    cat = Catalog(db.connection)
    assert [cat.tx_at(r["tx"]) for r in people] == [r["at"] for r in people]
    assert [r["at"] for r in people] == [CONFORMANCE_CLOCK + k * SECOND for k in (1, 2, 3, 4)]
    assert cat.tx_at(67) is None                      # ada is not a transaction
    assert cat.imported_at(69) is None                # a local write, not an applied event


def test_imported_at_of_an_applied_event(db):
    source = seeded_db(start=1_000_000_000_000_000)
    at = source.transact({"id": "a", "x/y": 1})["at"]
    lines = [line + "\n" for line in source.iter_events(64)]
    source.close()
    [report] = db.apply(lines)
    cat = Catalog(db.connection)
    assert cat.imported_at(report["tx"]) == at == 1_000_000_001_000_000
    assert cat.tx_at(report["tx"]) == report["at"] == CONFORMANCE_CLOCK + SECOND


@pytest.mark.parametrize("offset, expected", [
    (-1, None),                       # before genesis
    (0, 64),                          # exactly genesis
    (SECOND - 1, 64),
    (SECOND, 66),
    (2 * SECOND + 500_000, 69),       # between receipts: the earlier one
    (4 * SECOND, 74),
    (10**9 * SECOND, 74),             # far future: the latest
])
def test_tx_for_instant(db, people, offset, expected):
    assert Catalog(db.connection).tx_for_instant(CONFORMANCE_CLOCK + offset) == expected


def test_tx_for_instant_respects_a_basis(db, people):
    far = CONFORMANCE_CLOCK + 10**6 * SECOND
    assert Catalog(db.connection).tx_for_instant(far, basis=69) == 69
    assert Catalog(db.connection).tx_for_instant(far, basis=70) == 69
    assert Catalog(db.connection, basis=71).tx_for_instant(far) == 71
    assert Catalog(db.connection, basis=71).tx_for_instant(far, basis=66) == 66


def test_tx_for_instant_ignores_domain_fgraph_at_facts(db, people):
    # a domain entity may carry fgraph/at; only a transaction's own receipt counts (03 §8)
    before = db.transact({"id": "x", "x/n": 0})
    domain = db.transact({"id": "evt", "fgraph/at": {"instant": "2026-01-01T00:00:05.500000Z"}})
    assert (before["at"], domain["at"]) == (CONFORMANCE_CLOCK + 5 * SECOND, CONFORMANCE_CLOCK + 6 * SECOND)
    cat = Catalog(db.connection)
    assert cat.tx_for_instant(CONFORMANCE_CLOCK + 5 * SECOND + 500_000) == before["tx"]
    assert cat.tx_for_instant(CONFORMANCE_CLOCK + 6 * SECOND) == domain["tx"]


def test_operation_lookup(db):
    cat = Catalog(db.connection)
    assert cat.operation("op-1") is None
    report = db.transact({"id": "counter", "counter/value": 1}, operation_id="op-1")
    tx, request_hash = cat.operation("op-1")
    assert tx == report["tx"]
    # the verified vector of spec 03 §10
    assert request_hash.hex() == "cdedfef141d3b01f87af331d0bf0c4ba76aa6ef46f83345710ce39970eb799cc"
    assert cat.operation("op-2") is None
    event_hash, operation_id, row_hash = cat.event_row(report["tx"])
    assert (operation_id, row_hash) == ("op-1", request_hash)
    [event_line] = db.iter_events(report["tx"] - 1)
    assert event_hash == hashlib.sha256(event_line.encode("utf-8")).digest()
    assert cat.event_row(65) is None


def test_live_values_are_in_fact_id_order(db, people):
    cat = Catalog(db.connection)
    rows = cat.live_values(67, 65)
    # written b, a, c: fact-id order, not value order (the (e, a, v) index would give a, b, c)
    assert [(v, t, tx) for _, v, t, tx in rows] == [("b", 4, 69), ("a", 4, 69), ("c", 4, 69)]
    ids = [row[0] for row in rows]
    assert ids == sorted(ids) and len(set(ids)) == 3
    db.retract("ada", "p/tags", "a")
    db.transact({"id": "ada", "p/tags": "0"})
    assert [v for _, v, _, _ in cat.live_values(67, 65)] == ["b", "c", "0"]
    assert cat.live_values(67, 70) == []          # ada holds no p/friend
    assert cat.live_values(999, 65) == []


def test_live_values_of_cardinality_one_after_replacement(db, people):
    report = db.transact({"id": "ada", "p/name": "Ada L"})
    [(fact_id, v, t, tx)] = Catalog(db.connection).live_values(67, 68)
    assert (v, t, tx) == ("Ada L", 4, report["tx"])
    assert fact_id == report["asserted"][-1]["id"]


def test_live_attributes(db, people):
    cat = Catalog(db.connection)
    assert sorted(cat.live_attributes(67)) == [65, 68]
    assert sorted(cat.live_attributes(72)) == [70, 73]
    db.retract("bob")
    assert cat.live_attributes(72) == []


def test_live_owners_in_fact_order(db, people):
    db.transact({"id": "bob", "p/team": "blue"})
    db.transact({"id": "ada", "p/team": "blue"})
    db.transact({"id": "cy", "p/team": "red"})
    cat = Catalog(db.connection)
    team = cat.id_by_name("p/team")
    assert cat.live_owners(team, "blue", 4) == [72, 67]   # bob's fact first, though ada's id is lower
    assert cat.live_owners(team, "red", 4) == [cat.id_by_name("cy")]
    assert cat.live_owners(team, "green", 4) == []
    db.retract("bob", "p/team")
    assert cat.live_owners(team, "blue", 4) == [67]


def test_live_refs_to(db, people):
    cat = Catalog(db.connection)
    [(fact_id, holder, attr)] = cat.live_refs_to(67)
    assert (holder, attr) == (72, 70)
    assert fact_id == next(f["id"] for f in people[3]["asserted"] if f["a"] == "p/friend")
    assert cat.live_refs_to(72) == []
    db.transact({"id": "cy", "p/friend": {"ref": "ada"}})
    assert [(e, a) for _, e, a in cat.live_refs_to(67)] == [(72, 70), (cat.id_by_name("cy"), 70)]
    db.retract("bob", "p/friend")
    assert [(e, a) for _, e, a in cat.live_refs_to(67)] == [(cat.id_by_name("cy"), 70)]


def test_has_live_attribute(db, people):
    cat = Catalog(db.connection)
    assert cat.has_live_attribute(65) is True
    assert cat.has_live_attribute(1) is True        # every transaction's receipt
    assert cat.has_live_attribute(15) is False      # no shapes anywhere
    db.retract("bob", "p/bio")
    assert cat.has_live_attribute(73) is False      # only a retracted fact is left


def test_blob_by_key(db, people):
    cat = Catalog(db.connection)
    key = hashlib.sha256(bytes([8]) + LONG_TEXT.encode("utf-8")).digest()
    assert cat.blob(key) == LONG_TEXT
    assert cat.blob(hashlib.sha256(bytes([4]) + LONG_TEXT.encode("utf-8")).digest()) is None
    assert cat.blob(bytes(32)) is None
    assert db.entity("bob")["p/bio"] == LONG_TEXT


def test_a_basis_hides_later_identities_and_transactions(db, people):
    past = Catalog(db.connection, basis=69)
    assert past.latest_tx() == 69
    assert past.identity(67) == ("ada", None, 69)
    assert past.id_by_name("ada") == 67
    assert past.id_by_name("bob") is None
    assert past.id_by_name("p/friend") is None
    assert past.identity(72) is None
    assert past.identity(74) is None
    assert past.id_by_gid(uuid.UUID(people[3]["event"]).bytes) is None
    assert past.id_by_gid(uuid.UUID(people[1]["event"]).bytes) == 69
    assert [t for t in range(60, 80) if past.is_transaction(t)] == [64, 66, 69]
    assert past.tx_for_instant(CONFORMANCE_CLOCK + 10 * SECOND) == 69
    assert Catalog(db.connection, basis=69).name_of(72) is None   # a cold lookup through a view


def test_a_basis_hides_later_identities_even_when_cached(db, people):
    cache = IdentityCache()
    now = Catalog(db.connection, cache=cache)
    assert (now.id_by_name("bob"), now.identity(74)[2], now.is_transaction(74)) == (72, 74, True)
    assert now.id_by_gid(uuid.UUID(people[3]["event"]).bytes) == 74
    past = Catalog(db.connection, basis=71, cache=cache)
    assert past.id_by_name("bob") is None
    assert past.identity(72) is None
    assert past.is_transaction(74) is False
    assert past.id_by_gid(uuid.UUID(people[3]["event"]).bytes) is None
    assert past.id_by_name("p/friend") == 70      # created at 71: visible at basis 71


def test_name_of_and_gid_of_stay_hidden_on_a_repeat_lookup(db, people):
    past = Catalog(db.connection, basis=69)
    assert past.name_of(72) is None               # first call: hidden (row now cached)
    assert past.gid_of(74) is None
    assert past.name_of(72) is None               # same question again: must not change answer
    assert past.gid_of(74) is None


class SmallCache(IdentityCache):
    LIMIT = 4


def fill(cache, field, count):
    for i in range(count):
        if field == "transactions":
            cache.transactions.add(100 + i)
        elif field == "rows":
            cache.rows[100 + i] = (f"n{i}", None, 64)
        elif field == "by_gid":
            cache.by_gid[bytes([i]) * 16] = 100 + i
        else:
            cache.by_name[f"n{i}"] = 100 + i


@pytest.mark.parametrize("field", ["rows", "by_name", "by_gid", "transactions"])
def test_trim_clears_only_past_the_limit(field):
    cache = SmallCache()
    fill(cache, field, SmallCache.LIMIT)
    cache.trim()
    assert len(getattr(cache, field)) == SmallCache.LIMIT           # at the limit: kept
    fill(cache, field, SmallCache.LIMIT + 1)
    cache.trim()
    assert (cache.rows, cache.by_name, cache.by_gid, cache.transactions) == ({}, {}, {}, set())  # past it: all


def test_cache_stays_bounded_and_correct_through_many_lookups(db):
    db.transact([{"id": f"e{i}", "x/v": i} for i in range(30)])
    cache = SmallCache()
    cat = Catalog(db.connection, cache=cache)
    expected = {f"e{i}": 65 + i + (1 if i else 0) for i in range(30)}   # e0 65, x/v 66, e1 67, ...
    for _round in range(3):
        for name, ident in expected.items():
            assert cat.id_by_name(name) == ident
            assert cat.name_of(ident) == name
            assert cat.is_transaction(ident) is False
            assert len(cache.rows) <= SmallCache.LIMIT + 1
            assert len(cache.by_name) <= SmallCache.LIMIT + 1
            assert len(cache.transactions) <= SmallCache.LIMIT + 1


def test_default_limit_and_catalog_trims_a_cache_it_is_given(db):
    assert IdentityCache.LIMIT == 4096  # issue 17: flat peak RSS from 10k to 100k events (benchmarks/machine.py)
    cache = SmallCache()
    cache.rows.update({i: ("x", None, 64) for i in range(SmallCache.LIMIT + 1)})
    Catalog(db.connection, cache=cache)
    assert cache.rows == {}


def test_gid_lookups_are_cached_and_still_respect_a_views_basis(db, people):
    cache = IdentityCache()
    gid = Catalog(db.connection).gid_of(74)
    statements = []
    db.connection.exec_trace = lambda cursor, sql, bindings: statements.append(sql) or True
    try:
        assert Catalog(db.connection, cache=cache).id_by_gid(gid) == 74
        assert Catalog(db.connection, cache=cache).id_by_gid(gid) == 74
        assert len(statements) == 1                                   # the second answer came from the cache
        assert Catalog(db.connection, basis=71, cache=cache).id_by_gid(gid) is None   # created after the basis
    finally:
        db.connection.exec_trace = None
    cache.clear()
    assert cache.by_gid == {} and cache.rows == {}


def test_remembered_rows_are_answered_without_a_query(db):
    cache = IdentityCache()
    cache.remember(500, "new/name", None, 502)
    cache.remember(501, None, b"\x01" * 16, 502)
    cache.remember(502, None, b"\x02" * 16, 502)
    statements = []
    db.connection.exec_trace = lambda cursor, sql, bindings: statements.append(sql) or True
    try:
        cat = Catalog(db.connection, cache=cache)
        assert (cat.id_by_name("new/name"), cat.id_by_gid(b"\x01" * 16), cat.id_by_gid(b"\x02" * 16)) == (500, 501, 502)
        assert cat.is_transaction(502) and statements == []
    finally:
        db.connection.exec_trace = None
