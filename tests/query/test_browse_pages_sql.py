"""Proves the SQL of browse's pages for people (fgraph/query/browse/pages_sql.py, issue 31 item 1):
the attribute list, what refers to an entity, an entity's transactions, its card and the recent
changes, read on browse's own bounded read-only connection, each by its index."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.query.browse import pages_sql
from fgraph.query.browse import sql as browse_sql


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("pages") / "t.fgraph"
    with fgraph.connect(str(path)) as db:
        db.declare("person/friend", type="ref", many=True)
        reports = {"ada": db.transact({"id": "ada", "person/name": "Ada Lovelace"}, by="alice", source="a.md"),
                   "charles": db.transact({"id": "charles", "person/name": "Charles Babbage",
                                           "person/friend": {"ref": "ada"}}, by="bob"),
                   "grace": db.transact({"id": "grace", "person/friend": [{"ref": "ada"}, {"ref": "charles"}]}),
                   "gone": db.transact({"id": "hedy", "person/friend": {"ref": "ada"}})}
        reports["retract"] = db.transact(["retract", "hedy", "person/friend", {"ref": "ada"}], by="editor")
    conn = browse_sql.connect_read_only(str(path))
    try:
        yield conn, reports
    finally:
        conn.close()


def rows(conn, sql, **params):
    cursor = conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def test_attributes_are_listed_by_name_with_their_type_and_use(store):
    conn, _ = store
    found = {row["attribute"]: row for row in rows(conn, pages_sql.ATTRIBUTES, after="")}
    assert set(found) == {"person/name", "person/friend"}      # no entity, no system attribute
    assert (found["person/friend"]["type"], found["person/friend"]["cardinality"]) == ("ref", "many")
    assert found["person/friend"]["live_facts"] == 3 and found["person/name"]["live_facts"] == 2
    assert [row["attribute"] for row in rows(conn, pages_sql.ATTRIBUTES, after="person/friend")] == ["person/name"]


def test_entities_leave_out_attributes_and_transactions(store):
    conn, _ = store
    assert [row["entity"] for row in rows(conn, browse_sql.ENTITIES, after="")] == \
        [row[0] for row in conn.execute("SELECT id FROM fgraph_ids WHERE name IN ('ada', 'charles', 'grace', 'hedy') "
                                        "ORDER BY id")]


def test_incoming_lists_the_live_refs_by_attribute_from_the_index(store):
    conn, _ = store
    ids = dict(conn.execute("SELECT name, id FROM fgraph_ids WHERE name IS NOT NULL"))
    assert [(r["attribute"], r["entity"]) for r in rows(conn, pages_sql.INCOMING, entity="ada")] == \
        [("person/friend", ids["charles"]), ("person/friend", ids["grace"])]   # hedy's ref was retracted
    assert rows(conn, pages_sql.INCOMING, entity="nobody") == []
    plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + pages_sql.INCOMING, {"entity": "ada"}))
    assert "SEARCH f USING INDEX fgraph_vaet (v=?)" in plan, plan


def test_an_entitys_transactions_newest_first_with_who_and_where(store):
    conn, reports = store
    got = rows(conn, pages_sql.RECEIPTS, entity="hedy")
    assert [(r["tx"], r["asserted"], r["retracted"], r["by"]) for r in got] == \
        [(reports["retract"]["tx"], 0, 1, "editor"), (reports["gone"]["tx"], 1, 0, None)]
    [ada] = rows(conn, pages_sql.RECEIPTS, entity="ada")
    assert (ada["tx"], ada["by"], ada["source"]) == (reports["ada"]["tx"], "alice", "a.md")


def test_the_entity_card_says_what_the_identity_is(store):
    conn, reports = store
    [ada] = rows(conn, pages_sql.ENTITY_CARD, entity="ada")
    assert (ada["name"], ada["uuid"], ada["is_attribute"], ada["is_transaction"], ada["live_facts"]) == \
        ("ada", None, 0, 0, 1)
    assert rows(conn, pages_sql.ENTITY_CARD, entity="person/name")[0]["is_attribute"] == 1
    [tx] = rows(conn, pages_sql.ENTITY_CARD, entity=str(reports["ada"]["tx"]))
    assert tx["is_transaction"] == 1 and tx["uuid"] == reports["ada"]["event"]
    assert rows(conn, pages_sql.ENTITY_CARD, entity="nobody") == []


def test_recent_changes_are_newest_first_naming_a_few_entities(store):
    conn, reports = store
    recent = rows(conn, pages_sql.RECENT)
    assert [r["tx"] for r in recent][:2] == [reports["retract"]["tx"], reports["gone"]["tx"]]
    assert recent[0]["retracted"] == 1 and recent[0]["by"] == "editor"
    hedy = conn.execute("SELECT id FROM fgraph_ids WHERE name = 'hedy'").fetchone()[0]
    assert recent[0]["entities"] == str(hedy)
    assert len(recent) <= pages_sql.RECENT_SIZE and all(r["tx"] > 64 for r in recent)   # never genesis


def test_recent_changes_name_the_records_before_the_attributes_they_declared(tmp_path):
    path = tmp_path / "declared.fgraph"
    with fgraph.connect(str(path)) as db:   # as an import writes: the schema and the record in one transaction
        tx = db.transact([{"id": "note/text", "fgraph/type": "text"}, {"id": "n1", "note/text": "hi"}])["tx"]
    conn = browse_sql.connect_read_only(str(path))
    try:
        ids = dict(conn.execute("SELECT name, id FROM fgraph_ids WHERE name IN ('n1', 'note/text')").fetchall())
        (row,) = [r for r in rows(conn, pages_sql.RECENT) if r["tx"] == tx]
    finally:
        conn.close()
    assert row["entities"] == f"{ids['n1']},{ids['note/text']}"   # note/text was written first
