"""The doctor tests' damage catalogue (spec 06 §3): the template store with every kind of row, and the
SQL that damages a copy of it in each class doctor must report -- the catalogue of test_doctor, the
damage aimed at the asserting side the one pass (test_doctor_asserted_lines) must see, and the damage
on the retracting side the worker walks (test_doctor_worker, test_digest_worker). The ``template``
fixture (tests/ops/conftest.py) is ``build`` run once per module."""

from __future__ import annotations

import hashlib
import shutil

import apsw

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED

LAST = "(SELECT max(tx) FROM fgraph_events)"
FIRST = "(SELECT min(tx) FROM fgraph_events WHERE tx > 64)"
TEXT_FACT = "(SELECT min(id) FROM fgraph_facts WHERE tx > 64 AND t = 4 AND rx IS NULL)"
INT_FACT = "(SELECT min(id) FROM fgraph_facts WHERE tx > 64 AND t = 2 AND rx IS NULL)"
REF_FACT = "(SELECT min(id) FROM fgraph_facts WHERE tx > 64 AND t = 0 AND e <> tx)"
ANON = "(SELECT min(id) FROM fgraph_ids WHERE gid IS NOT NULL AND id > 64 AND id NOT IN (SELECT tx FROM fgraph_events))"
REHASH = "UPDATE fgraph_events SET event_hash = sha256(event_data) WHERE tx = {}"
EXCISION = "(SELECT tx FROM fgraph_facts WHERE a = 11)"

# name -> (SQL statements, repairable). Statements run with CHECK constraints ignored.
DAMAGE = {
    "event_data tampered": (["UPDATE fgraph_events SET event_data = replace(event_data, 'Ada', 'Adb') WHERE instr(event_data, 'Ada')"], False),
    "event_hash changed": ([f"UPDATE fgraph_events SET event_hash = zeroblob(32) WHERE tx = {LAST}"], False),
    "rx <= tx": ([f"UPDATE fgraph_facts SET rx = tx WHERE id = {INT_FACT}"], False),
    "rx not a transaction": ([f"UPDATE fgraph_facts SET rx = 100000 WHERE id = {INT_FACT}"], False),
    "dangling attribute": ([f"UPDATE fgraph_facts SET a = 100000 WHERE id = {INT_FACT}"], False),
    "dangling ref": ([f"UPDATE fgraph_facts SET v = 100000 WHERE id = {REF_FACT}"], False),
    "dangling entity": ([f"UPDATE fgraph_facts SET e = 100000 WHERE id = {INT_FACT}"], False),
    "attribute not an attribute": ([f"UPDATE fgraph_facts SET a = (SELECT id FROM fgraph_ids WHERE name = 'ada') "
                                    f"WHERE id = {INT_FACT}"], False),
    "missing blob": (["DELETE FROM fgraph_blobs WHERE typeof(data) = 'text'"], False),
    "altered blob": (["UPDATE fgraph_blobs SET data = data || 'z' WHERE typeof(data) = 'text'"], False),
    "orphaned blob": (["INSERT INTO fgraph_blobs VALUES (zeroblob(32), 'abc')"], True),
    "FTS row removed": ([f"DELETE FROM fgraph_fts WHERE rowid = {TEXT_FACT}"], True),
    "FTS row added": (["INSERT INTO fgraph_fts (rowid, text) VALUES (999999, 'ghost')"], True),
    "FTS row altered": ([f"UPDATE fgraph_fts SET text = 'changed' WHERE rowid = {TEXT_FACT}"], True),
    "FTS and orphan together": (["DELETE FROM fgraph_fts WHERE rowid = 2",
                                 "INSERT INTO fgraph_blobs VALUES (zeroblob(32), X'00')"], True),
    "next_id too high": (["UPDATE fgraph_meta SET value = value + 1 WHERE key = 'next_id'"], False),
    "next_id too low": (["UPDATE fgraph_meta SET value = value - 1 WHERE key = 'next_id'"], False),
    "next_id as text": (["UPDATE fgraph_meta SET value = CAST(value AS TEXT) WHERE key = 'next_id'"], False),
    "created_at changed": (["UPDATE fgraph_meta SET value = value + 1 WHERE key = 'created_at'"], False),
    "extra meta key": (["INSERT INTO fgraph_meta VALUES ('extra', 1)"], False),
    "reserved identity id": (["INSERT INTO fgraph_ids VALUES (30, 'thirty', NULL, 64)"], False),
    "system name changed": (["UPDATE fgraph_ids SET name = 'fgraph/xx' WHERE id = 3"], False),
    "named transaction": ([f"UPDATE fgraph_ids SET name = 'tx-name', gid = NULL WHERE id = {LAST}"], False),
    "identity used before created": ([f"UPDATE fgraph_ids SET created_tx = {LAST} WHERE name = 'ada'"], False),
    "created_tx not a transaction": (["UPDATE fgraph_ids SET created_tx = 65 WHERE id = 66"], False),
    "self-receipt deleted": ([f"DELETE FROM fgraph_facts WHERE e = tx AND a = 1 AND tx = {LAST}"], False),
    "events row deleted": ([f"DELETE FROM fgraph_events WHERE tx = {LAST}"], False),
    "genesis fact altered": (["UPDATE fgraph_facts SET v = 'bool' WHERE id = 2"], False),
    "genesis fact deleted": (["DELETE FROM fgraph_facts WHERE id = 39"], False),
    "extra genesis fact": (["INSERT INTO fgraph_facts (e, a, v, t, tx) VALUES (65, 10, 'hi', 4, 64)"], False),
    "anonymous eid changed": ([f"UPDATE fgraph_ids SET gid = randomblob(16) WHERE id = {ANON}"], False),
    "NULL payload without excision": ([f"UPDATE fgraph_events SET event_data = NULL WHERE tx = {FIRST}"], False),
    "payload at differs from receipt": ([f"UPDATE fgraph_facts SET v = v + 1 WHERE a = 1 AND e = tx AND tx = {LAST}"],
                                        False),
    "non-canonical payload": ([f"UPDATE fgraph_events SET event_data = ' ' || event_data WHERE tx = {LAST}",
                               REHASH.format(LAST)], False),
    "payload names another event": ([f"UPDATE fgraph_events SET event_data = (SELECT event_data FROM fgraph_events "
                                     f"WHERE tx = {FIRST}) WHERE tx = {LAST}", REHASH.format(LAST)], False),
    "storage class differs from tag": ([f"UPDATE fgraph_facts SET t = 2 WHERE id = {TEXT_FACT}"], False),
    "tag out of range": ([f"UPDATE fgraph_facts SET t = 11 WHERE id = {INT_FACT}"], False),
    "bool not 0 or 1": (["UPDATE fgraph_facts SET v = 2 WHERE t = 1 AND tx > 64"], False),
    "JSON value not canonical": ([f"UPDATE fgraph_facts SET t = 10, v = '{{\"b\":1, \"a\":2}}' WHERE id = {TEXT_FACT}"],
                                 False),
    "value breaks its type": ([f"UPDATE fgraph_facts SET v = 'three', t = 4 WHERE id = {INT_FACT}"], False),
    "cardinality-one broken": (["UPDATE fgraph_facts SET rx = NULL WHERE t = 2 AND rx IS NOT NULL"], False),
    "unique value duplicated": (["INSERT INTO fgraph_facts (e, a, v, t, tx) SELECT (SELECT id FROM fgraph_ids WHERE "
                                 "name = 'bob'), a, v, t, tx FROM fgraph_facts WHERE v = 'ada@x'"], False),
    "vector dims broken": (["UPDATE fgraph_facts SET v = 3 WHERE a = 9 AND tx > 64"], False),
    "shape required attribute gone": ([f"UPDATE fgraph_facts SET rx = {LAST} WHERE v = 'Bob'"], False),
    "sqlite_sequence behind": (["UPDATE sqlite_sequence SET seq = 10"], False),
    "excision marker removed": (["DELETE FROM fgraph_facts WHERE a = 11"], False),
    "redaction names unknown event": ([f"UPDATE fgraph_events SET event_data = replace(event_data, '\"redacts\":[', "
                                       f"'\"redacts\":[\"00000000-0000-4000-8000-000000000001\",') WHERE tx = {EXCISION}",
                                       REHASH.format(EXCISION)], False),
    "fact value rewritten": ([f"UPDATE fgraph_facts SET v = v + 1 WHERE id = {INT_FACT}"], False),
    "fact moved to another entity": (["UPDATE fgraph_facts SET e = (SELECT id FROM fgraph_ids WHERE name = 'h') "
                                      "WHERE v = 'Bob'"], False),
    "foreign table": (["CREATE TABLE intruder (x)"], False),
    "wrong markers": (["PRAGMA user_version = 3"], False),
    "index dropped": (["DROP INDEX fgraph_txout"], False),
}


def build(path: str, monkeypatch) -> None:
    """A small store with every kind of row: blobs, vectors, refs, anonymous ids, schema, a shape, an excision."""
    monkeypatch.setenv("FGRAPH_EVENT_SEED", CONFORMANCE_SEED)
    db = fgraph.connect(path, clock=CONFORMANCE_CLOCK)
    try:
        db.declare("p/email", type="text", unique=True)
        db.declare("p/v", type="vector", dims=2)
        db.transact({"id": "ada", "p/name": "Ada", "p/age": 36, "p/email": "ada@x", "p/bio": "x" * 300,
                     "p/v": {"vector": [1, 2]}, "p/data": {"json": {"k": [1.5, None]}}, "p/ok": True})
        db.transact([{"id": {"tmp": "t"}, "n/v": "anonymous"}, {"id": "h", "n/l": {"ref": {"tmp": "t"}}}])
        db.transact({"id": "ada", "p/age": 37})
        db.transact({"id": "shape/p", "fgraph/shape-required": [{"ref": "p/name"}]})
        db.transact({"id": "bob", "fgraph/shape": {"ref": "shape/p"}, "p/name": "Bob"})
        db.transact({"id": "victim", "p/name": "gone", "p/friend": {"ref": "ada"}})
        db.excise("victim", operation_id="erase", if_basis_tx=db.latest_tx())
        report = db.transact({"id": "bob", "p/n": 1}, by="me", source="src", meta={"k": 1.5}, tx={"audit/tag": "t"})
        db.transact({"id": "ada", "p/v": {"vector": [3, 4]}, "p/age": 38})
        db.undo(report["tx"])
        db.transact({"id": "h", "p/name": "after"})
    finally:
        db.close()


def copy_of(template: str, tmp_path, name: str = "copy.db") -> str:
    dest = str(tmp_path / name)
    shutil.copy(template, dest)
    return dest


def damage(path: str, statements: list) -> None:
    conn = apsw.Connection(path)
    conn.create_scalar_function("sha256", lambda t: hashlib.sha256(t.encode("utf-8")).digest(), 1)
    conn.execute("PRAGMA ignore_check_constraints = 1")
    for sql in statements:
        conn.execute(sql)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def retract_side_damage(path: str) -> None:
    """A retracted fact moved to a retracting event that never mentions it."""
    damage(path, ["UPDATE fgraph_facts SET rx = (SELECT max(tx) FROM fgraph_events) WHERE id = "
                  "(SELECT min(id) FROM fgraph_facts WHERE rx IS NOT NULL AND tx > 64 AND a > 18)"])


LAST_FACT = "(SELECT max(id) FROM fgraph_facts WHERE e <> tx AND tx > 64)"
# Damage the asserting walk sees: each fact then disagrees with (or is missing from) its event.
ASSERTING_DAMAGE = {
    "provenance rewritten": ["UPDATE fgraph_facts SET v = 'someone else' WHERE a = 2"],
    "transaction meta rewritten": ["UPDATE fgraph_facts SET v = '{\"k\":2.5}' WHERE a = 4"],
    "transaction fact rewritten": ["UPDATE fgraph_facts SET v = 'other' WHERE a = (SELECT id FROM fgraph_ids "
                                   "WHERE name = 'audit/tag')"],
    "int becomes a float": [f"UPDATE fgraph_facts SET t = 3, v = v + 0.25 WHERE id = {INT_FACT}"],
    "ref retargeted": ["UPDATE fgraph_facts SET v = (SELECT id FROM fgraph_ids WHERE name = 'bob') WHERE t = 0 "
                       "AND tx > 64 AND e <> tx"],
    "json value rewritten": ["UPDATE fgraph_facts SET v = '{\"k\":[2.5,null]}' WHERE t = 10 AND tx > 64"],
    "excision marker moved": ["UPDATE fgraph_facts SET e = tx - 1 WHERE a = 11"],
    # out of transaction order: the pass looks the event up, as the walk does
    "fact moved to an earlier transaction": [f"UPDATE fgraph_facts SET tx = {FIRST} WHERE id = {LAST_FACT}"],
    "fact moved past the latest event": [f"UPDATE fgraph_facts SET tx = {LAST} + 1 WHERE id = {LAST_FACT}"],
    "asserting payload redacted": [f"UPDATE fgraph_events SET event_data = NULL WHERE tx = {LAST}"],
    "attribute loses its name": ["UPDATE fgraph_ids SET name = NULL, gid = randomblob(16) WHERE name = 'p/age'"],
}
# The pass must decide these itself (the walk on clean stores and asserting-side damage).
DECIDED = ["clean", "fact value rewritten", "fact moved to another entity", "provenance rewritten",
           "transaction meta rewritten", "transaction fact rewritten", "int becomes a float", "ref retargeted",
           "json value rewritten", "excision marker moved", "fact moved to an earlier transaction",
           "asserting payload redacted"]
