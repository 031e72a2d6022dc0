"""Proves genesis (spec 01 §2, §7–§8): the 18 system identities, transaction 64 with its fixed event
UUID and hash, exactly the rows of the recipe, and application ids starting at 65."""

from __future__ import annotations

import hashlib
import re

import apsw
import pytest

import fgraph
from fgraph.core import genesis, layout
from fgraph.core.canonical import loads
from fgraph.core.identity import GENESIS_EVENT, GENESIS_TX
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.paths import SHARED, UPSTREAM, requires_upstream
from tests.support.clock import stepping_clock

SPEC_FORMAT = SHARED / "spec" / "01-format.md"
GENESIS_HASH = "1613E2E6BA98AD4CDBB185FC193D02DD2C472737D811ABADF0350D1D5F888191"  # 01 §8, at CONFORMANCE_CLOCK

SYSTEM = [  # spec 01 §7: id, name, fgraph/type
    (1, "fgraph/at", "instant"), (2, "fgraph/by", "text"), (3, "fgraph/source", "text"),
    (4, "fgraph/meta", "json"), (5, "fgraph/many", "bool"), (6, "fgraph/unique", "bool"),
    (7, "fgraph/nohistory", "bool"), (8, "fgraph/type", "text"), (9, "fgraph/dims", "int"),
    (10, "fgraph/doc", "text"), (11, "fgraph/excised", "ref"), (12, "fgraph/undoes", "ref"),
    (13, "fgraph/imported-at", "instant"), (14, "fgraph/vector-model", "text"), (15, "fgraph/shape", "ref"),
    (16, "fgraph/shape-required", "ref"), (17, "fgraph/shape-allowed", "ref"), (18, "fgraph/shape-closed", "bool"),
]

CONSTANTS = {
    "A_AT": "fgraph/at", "A_BY": "fgraph/by", "A_SOURCE": "fgraph/source", "A_META": "fgraph/meta",
    "A_MANY": "fgraph/many", "A_UNIQUE": "fgraph/unique", "A_NOHISTORY": "fgraph/nohistory",
    "A_TYPE": "fgraph/type", "A_DIMS": "fgraph/dims", "A_DOC": "fgraph/doc", "A_EXCISED": "fgraph/excised",
    "A_UNDOES": "fgraph/undoes", "A_IMPORTED_AT": "fgraph/imported-at", "A_VECTOR_MODEL": "fgraph/vector-model",
    "A_SHAPE": "fgraph/shape", "A_SHAPE_REQUIRED": "fgraph/shape-required",
    "A_SHAPE_ALLOWED": "fgraph/shape-allowed", "A_SHAPE_CLOSED": "fgraph/shape-closed",
}


@pytest.fixture
def db():
    database = fgraph.connect(":memory:", clock=stepping_clock())
    yield database
    database.close()


def test_system_identities_match_the_spec_table():
    assert [(r["id"], r["name"], r["type"]) for r in genesis.system_identities()] == SYSTEM
    assert genesis.SYSTEM_MAX == 18 == len(genesis.system_identities())
    assert genesis.system_names() == {name: i for i, name, _ in SYSTEM}
    assert all(isinstance(r["doc"], str) and r["doc"] for r in genesis.system_identities())


@pytest.mark.skipif(not SPEC_FORMAT.is_file(), reason="../shared/spec is not present")
def test_spec_table_is_what_this_test_encodes():
    section = SPEC_FORMAT.read_text("utf-8").split("## 7. System identities", 1)[1].split("## 8.", 1)[0]
    cells = re.findall(r"\|\s*(\d+)\s*\|\s*`([^`]+)`\s*\|\s*(\w+)\s*", section)
    assert sorted((int(i), name, kind) for i, name, kind in cells) == SYSTEM


@requires_upstream()
def test_doc_strings_equal_the_upstream_core_rows():
    rows = (UPSTREAM / "fixtures" / "format-v2.core").read_text("utf-8").splitlines()
    docs = {}
    for row in rows:
        parts = row.split("|")
        if parts[0] == "fact" and 20 <= int(parts[1]) <= 37:
            assert parts[3:5] == ["10", "text"]
            docs[int(parts[2])] = parts[5][1:-1].replace("''", "'")
    assert docs == {r["id"]: r["doc"] for r in genesis.system_identities()}


@pytest.mark.parametrize("constant, name", sorted(CONSTANTS.items()))
def test_attribute_constants_name_the_registered_identities(db, constant, name):
    value = getattr(genesis, constant)
    assert genesis.system_names()[name] == value
    assert db.connection.execute("SELECT name, gid, created_tx FROM fgraph_ids WHERE id = ?",
                                 (value,)).fetchall() == [(name, None, 64)]


def test_constants_cover_every_system_identity_once():
    assert sorted(getattr(genesis, c) for c in CONSTANTS) == list(range(1, 19))
    assert genesis.FIRST_APP_ID == 65
    assert GENESIS_TX == 64


def test_genesis_event_text_and_hash():
    text = genesis.genesis_event(CONFORMANCE_CLOCK)
    assert text == ('{"asserted":[],"at":1767225600000000,"created":[' +
                    ",".join(f'"{name}"' for _, name, _ in SYSTEM) +
                    '],"event":"00000000-0000-4000-8000-000000000040","fgraph":"event/1","retracted":[]}')
    assert hashlib.sha256(text.encode("utf-8")).hexdigest().upper() == GENESIS_HASH
    other = genesis.genesis_event(CONFORMANCE_CLOCK + 1)
    assert other == text.replace('"at":1767225600000000', '"at":1767225600000001')


def test_genesis_receipt_is_transaction_64(db):
    assert db.receipt(64) == {
        "at": CONFORMANCE_CLOCK, "basis_tx": 64, "event": GENESIS_EVENT,
        "event_hash": "sha256:" + GENESIS_HASH.lower(), "facts": [], "operation_id": None,
        "read_basis_tx": 64, "request_hash": None, "tx": 64,
    }
    assert db.latest_tx() == 64


def test_genesis_rows_in_a_new_file(db):
    q = db.connection.execute
    assert q("SELECT key, value FROM fgraph_meta ORDER BY key").fetchall() == \
        [("created_at", CONFORMANCE_CLOCK), ("next_id", 65)]
    assert q("SELECT id, name, hex(gid), created_tx FROM fgraph_ids ORDER BY id").fetchall() == \
        [(i, name, "", 64) for i, name, _ in SYSTEM] + [(64, None, "00000000000040008000000000000040", 64)]
    facts = q("SELECT id, e, a, v, t, tx, rx FROM fgraph_facts ORDER BY id").fetchall()
    docs = [r["doc"] for r in genesis.system_identities()]
    assert facts == (
        [(1, 64, 1, CONFORMANCE_CLOCK, 5, 64, None)]
        + [(1 + i, i, 8, kind, 4, 64, None) for i, _, kind in SYSTEM]
        + [(19 + i, i, 10, docs[i - 1], 4, 64, None) for i, _, _ in SYSTEM]
        + [(38, 16, 5, 1, 1, 64, None), (39, 17, 5, 1, 1, 64, None)])
    assert q("SELECT rowid, text FROM fgraph_fts ORDER BY rowid").fetchall() == \
        [(f[0], f[3]) for f in facts[1:37]]
    assert q("SELECT seq FROM sqlite_sequence WHERE name = 'fgraph_facts'").fetchall() == [(39,)]
    assert q("SELECT tx, hex(event_hash), event_data, operation_id, request_hash FROM fgraph_events").fetchall() == \
        [(64, GENESIS_HASH, genesis.genesis_event(CONFORMANCE_CLOCK), None, None)]
    assert q("SELECT count(*) FROM fgraph_blobs").fetchall() == [(0,)]


def test_write_genesis_on_bare_ddl_equals_a_connected_file(db):
    scratch = apsw.Connection(":memory:")
    try:
        scratch.execute(layout.ddl_text())
        scratch.execute("BEGIN")
        genesis.write_genesis(scratch, CONFORMANCE_CLOCK)
        scratch.execute("COMMIT")
        for sql in ("SELECT * FROM fgraph_meta ORDER BY key", "SELECT * FROM fgraph_ids ORDER BY id",
                    "SELECT * FROM fgraph_events", "SELECT * FROM fgraph_facts ORDER BY id",
                    "SELECT rowid, text FROM fgraph_fts ORDER BY rowid", "SELECT * FROM sqlite_sequence"):
            assert scratch.execute(sql).fetchall() == db.connection.execute(sql).fetchall(), sql
    finally:
        scratch.close()


def test_created_at_is_one_clock_reading():
    readings = []

    def clock():
        readings.append(CONFORMANCE_CLOCK + 7 * len(readings))
        return readings[-1]

    db = fgraph.connect(":memory:", clock=clock)
    try:
        assert readings == [CONFORMANCE_CLOCK]
        assert db.receipt(64)["at"] == CONFORMANCE_CLOCK
        event = db.connection.execute("SELECT event_data FROM fgraph_events WHERE tx = 64").fetchone()[0]
        assert loads(event)["at"] == CONFORMANCE_CLOCK
    finally:
        db.close()


def test_pristine_store_is_clean_and_emits_no_events(db):
    assert db.stats() == {"application_id": 1718055521, "attributes": 18, "blobs": 0, "entities": 18, "facts": 39,
                          "format_version": 2, "live_facts": 39, "size": 0, "transactions": 1}
    assert db.event_records() == []
    report = db.doctor()
    assert report["ok"] is True and report["problems"] == []


def test_first_application_ids_start_at_65(monkeypatch):
    monkeypatch.setenv("FGRAPH_CLOCK", str(CONFORMANCE_CLOCK))
    monkeypatch.setenv("FGRAPH_EVENT_SEED", "fgraph-conformance-v2")
    db = fgraph.connect(":memory:")
    try:
        report = db.transact({"id": "a", "x/y": 1})  # the example of spec 03 §12
        assert report == {
            "asserted": [{"a": "fgraph/at", "e": 67, "id": 40, "rx": None, "tx": 67,
                          "v": {"instant": "2026-01-01T00:00:01.000000Z"}},
                         {"a": "x/y", "e": "a", "id": 41, "rx": None, "tx": 67, "v": 1}],
            "at": 1767225601000000, "basis_tx": 64, "event": "01eb0e5e-0d81-4a0a-9747-d7a8570bc521",
            "ids": {"a": 65}, "retracted": [], "status": "applied", "tx": 67}
        q = db.connection.execute
        assert q("SELECT id, name FROM fgraph_ids WHERE id > 64 ORDER BY id").fetchall() == \
            [(65, "a"), (66, "x/y"), (67, None)]
        assert q("SELECT value FROM fgraph_meta WHERE key = 'next_id'").fetchall() == [(68,)]
        assert q("SELECT count(*) FROM fgraph_ids WHERE id BETWEEN 19 AND 63 OR id <= 0").fetchall() == [(0,)]
        assert q("SELECT count(*) FROM fgraph_facts WHERE tx = 64").fetchall() == [(39,)]
    finally:
        db.close()


@pytest.mark.parametrize("ref", [1, "fgraph/doc", 18, 64])
def test_system_identities_and_genesis_are_not_writable(db, ref):
    with pytest.raises(fgraph.Unsupported):
        db.transact({"id": ref, "fgraph/doc": "changed"})
    assert db.latest_tx() == 64
    assert db.connection.execute("SELECT count(*) FROM fgraph_facts").fetchone()[0] == 39
