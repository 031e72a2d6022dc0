"""Proves the schema cache (fgraph/core/schema_cache.py): it survives this connection's own commits,
and is dropped when another connection commits (PRAGMA data_version moves) or when cleared."""

from __future__ import annotations

import fgraph
from fgraph.core.schema_cache import SchemaCache


def test_another_connection_commit_clears_it(tmp_path):
    path = str(tmp_path / "s.db")
    with fgraph.connect(path) as mine, fgraph.connect(path) as theirs:
        cache = SchemaCache()
        cache.validate(mine.connection)
        cache.schemas[1] = {"many": False}
        cache.head = object()
        mine.transact({"id": "a", "p/n": 1})  # our own commit does not move our data_version
        cache.validate(mine.connection)
        assert cache.schemas == {1: {"many": False}}
        theirs.transact({"id": "b", "p/n": 2})
        cache.validate(mine.connection)
        assert cache.schemas == {} and cache.head is None


def test_clear_forgets_everything():
    cache = SchemaCache()
    cache.rows[(1, 2)] = {}
    cache.schemas[1] = {}
    cache.has_shapes, cache.head = True, object()
    cache.clear()
    assert (cache.rows, cache.schemas, cache.has_shapes, cache.head) == ({}, {}, None, None)


def test_a_declaration_seen_by_another_handle_takes_effect(tmp_path):
    path = str(tmp_path / "d.db")
    with fgraph.connect(path) as mine, fgraph.connect(path) as theirs:
        mine.transact({"id": "a", "p/tags": "x"})
        theirs.declare("p/tags", many=True)
        mine.transact({"id": "a", "p/tags": "y"})  # many now: both values live, nothing replaced
        assert sorted(mine.entity("a")["p/tags"]) == ["x", "y"]
