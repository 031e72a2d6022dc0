"""Proves datoms (fgraph.query.datoms): key order by stored value then tag, a cursor walk that
visits every datom once, cursors pinned to basis and components, and forged cursors refused."""

from __future__ import annotations

import base64

import pytest

import fgraph
from fgraph.core.canonical import dumps, loads
from tests.support.query_data import people


def walk(db, index, components=(), limit=7, source="current"):
    page = db.datoms(index, list(components), limit=limit, source=source)
    items = list(page["items"])
    while page["next_cursor"]:
        page = db.datoms(index, list(components), limit=limit, source=source, cursor=page["next_cursor"])
        items += page["items"]
    return items


def test_a_cursor_walk_equals_one_big_page_in_every_index():
    with people() as db:
        db.transact({"id": "alice", "person/age": 36, "person/knows": {"ref": "bob"}})
        for index in ("eavt", "avet", "vaet"):
            for source in ("current", "history"):
                whole = db.datoms(index, limit=1000, source=source)["items"]
                assert walk(db, index, source=source) == whole and whole
        keys = [(i["e"], i["a"]) for i in walk(db, "eavt")]
        assert len(set(map(str, walk(db, "eavt")))) == len(keys)


def test_stored_value_order_then_tag():
    with fgraph.connect(":memory:") as db:
        db.declare("m/v", many=True)
        db.transact({"id": "x", "m/v": [1, True, 0, {"instant": 0}, "a", {"bytes": "AA=="}, 0.5]})
        values = [i["v"] for i in db.datoms("eavt", ["x", "m/v"])["items"]]
        assert values == [0, {"instant": "1970-01-01T00:00:00.000000Z"}, 0.5, True, 1, "a", {"bytes": "AA=="}]


def test_later_writes_do_not_shift_pages_and_cursors_check_their_call():
    with people() as db:
        first = db.datoms("avet", ["person/name"], limit=1)
        db.transact({"id": "aaron", "person/name": "Aaron"})
        rest = walk_from(db, "avet", ["person/name"], first["next_cursor"])
        assert [i["v"] for i in rest] == ["Bob", "Charlie"] and first["basis_tx"] == rest_basis(db, first)
        with pytest.raises(fgraph.QueryError, match="another index"):
            db.datoms("avet", ["person/age"], cursor=first["next_cursor"])
        with pytest.raises(fgraph.QueryError, match="after this view"):
            db.at(64).datoms("avet", ["person/name"], cursor=first["next_cursor"])


def walk_from(db, index, components, cursor):
    items = []
    while cursor:
        page = db.datoms(index, components, limit=1, cursor=cursor)
        items += page["items"]
        cursor = page["next_cursor"]
    return items


def rest_basis(db, first):
    return db.datoms("avet", ["person/name"], limit=1, cursor=first["next_cursor"])["basis_tx"]


def forge(cursor, **changes):
    doc = loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
    doc.update(changes)
    return base64.urlsafe_b64encode(dumps(doc).encode()).decode().rstrip("=")


def test_forged_and_garbled_cursors_are_query_errors():
    with people() as db:
        cursor = db.datoms("eavt", ["alice"], limit=1)["next_cursor"]
        for bad in ("", "garbage", cursor + "=", cursor[:-3], forge(cursor, basis=65), forge(cursor, v=1),
                    forge(cursor, seek=[1, 2]), forge(cursor, extra=1)):
            with pytest.raises(fgraph.QueryError):
                db.datoms("eavt", ["alice"], cursor=bad)
