"""Proves the agreement check (facts against the events that asserted and retracted them), which
walks both fact cursors beside the one event pass: each kind of disagreement is counted exactly
once, on either side, and a fact found out of transaction order is still checked against its own
event."""

from __future__ import annotations

import apsw
import pytest

import fgraph
from fgraph.ops.doctor import agreement

LABEL = "facts disagree with the events that asserted or retracted them"


@pytest.fixture()
def store(tmp_path):
    path = str(tmp_path / "a.db")
    with fgraph.connect(path) as db:
        db.transact({"id": "ada", "p/name": "Ada", "p/age": 36, "p/score": 1.5, "p/at": {"instant": 1000}})
        db.transact({"id": "bob", "p/name": "Bob", "p/friend": {"ref": "ada"}, "p/data": {"json": {"k": [0.25]}}})
        db.transact({"id": "ada", "p/age": 37, "p/score": 2.5})
        db.transact({"id": "bob", "p/name": "Robert"}, by="me", source="s", meta={"x": 0.5})
        db.retract("bob", "p/friend")
    return path


def damage(path: str, *statements: str) -> None:
    conn = apsw.Connection(path)
    conn.execute("PRAGMA ignore_check_constraints = 1")
    for sql in statements:
        conn.execute(sql)
    conn.close()


def disagreeing(path: str) -> int:
    with fgraph.connect(path, read_only=True) as db:
        problems = db.doctor()["problems"]
    found = [p for p in problems if p.startswith(LABEL)]
    return int(found[0].rsplit(": ", 1)[1]) if found else 0


def test_a_clean_store_agrees(store):
    assert disagreeing(store) == 0


@pytest.mark.parametrize(("attribute", "where", "value", "expected"), [
    ("p/age", "rx IS NULL", "v + 100", 1),       # listed by its asserting event only
    # replaced by a later assertion: the retracting event names (entity, attribute), not the value
    ("p/age", "rx IS NOT NULL", "v + 100", 1),
    # retracted explicitly: both events list the value
    ("p/friend", "rx IS NOT NULL", "(SELECT id FROM fgraph_ids WHERE name = 'bob')", 2),
])
def test_a_rewritten_value_is_counted_on_each_side_that_lists_it(store, attribute, where, value, expected):
    damage(store, f"UPDATE fgraph_facts SET v = {value} WHERE a = (SELECT id FROM fgraph_ids WHERE name = "
                  f"'{attribute}') AND {where}")
    assert disagreeing(store) == expected


@pytest.mark.parametrize("attribute,new_value", [("p/score", "v + 0.125"), ("p/at", "v + 1"),
                                                 ("p/data", "'{\"k\":[0.5]}'"), ("p/name", "'Adb'")])
def test_each_value_kind_is_compared(store, attribute, new_value):
    damage(store, f"UPDATE fgraph_facts SET v = {new_value} WHERE id = (SELECT min(id) FROM fgraph_facts WHERE "
                  f"a = (SELECT id FROM fgraph_ids WHERE name = '{attribute}') AND rx IS NULL)")
    assert disagreeing(store) == 1


def test_a_retraction_moved_to_another_event_is_counted(store):
    damage(store, "UPDATE fgraph_facts SET rx = rx - 1 WHERE rx = (SELECT max(rx) FROM fgraph_facts)")
    assert disagreeing(store) == 1


def test_provenance_facts_are_compared(store):
    damage(store, "UPDATE fgraph_facts SET v = 'someone' WHERE a = (SELECT id FROM fgraph_ids WHERE name = 'fgraph/by')")
    assert disagreeing(store) == 1


def test_facts_out_of_transaction_order_are_checked_against_their_own_event(store):
    # Swap the ids of the first fact of the second and third transactions: the fact cursor now
    # meets a later transaction's fact first, and must look the earlier event up.
    with apsw.Connection(store) as conn:
        first, second = [r[0] for r in conn.execute(
            "SELECT min(id) FROM fgraph_facts WHERE tx > 64 AND e <> tx GROUP BY tx ORDER BY tx LIMIT 2 OFFSET 1")]
    damage(store, f"UPDATE fgraph_facts SET id = -1 WHERE id = {first}",
           f"UPDATE fgraph_facts SET id = {first} WHERE id = {second}",
           f"UPDATE fgraph_facts SET id = {second} WHERE id = -1")
    assert disagreeing(store) == 0


def test_keys_are_canonical_bytes():
    assert agreement.key(["ada", "p/score", 1e21, "float"]) == b'["ada","p/score",1e+21,"float"]'
    assert agreement.key(["ada", "p/age", 3, "int"]) == b'["ada","p/age",3,"int"]'
    assert agreement.fact_key("ada", None, "p/score", 2.0, 3, None, None, None) == b'["ada","p/score",2,"float"]'
    assert agreement.fact_key(None, bytes(16), "p/n", "x", 4, None, None, None) == \
        b'[{"eid":"00000000-0000-0000-0000-000000000000"},"p/n","x","text"]'
