"""Proves pull patterns (fgraph.query.datalog.pull): forward, star, reverse in fact order, one nested
level then refs, pattern errors, and Db.pull's selector rules."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.query_data import chain, people


def test_depth_is_root_plus_one_level():
    with fgraph.connect(":memory:") as db:
        chain(db, 3, "n/next")
        db.transact([{"id": f"n{i}", "n/v": i} for i in range(4)])
        deep = db.pull("n0", ["n/v", {"n/next": ["n/v", {"n/next": ["n/v"]}]}])
        assert deep == {"n/next": {"n/next": {"ref": "n2"}, "n/v": 1}, "n/v": 0}
        assert db.pull("n1", ["n/_next", "nothing/_here"]) == {"n/_next": [{"ref": "n0"}], "nothing/_here": []}


def test_star_many_values_and_missing_attributes():
    with people() as db:
        db.declare("person/tag", many=True)
        db.transact({"id": "alice", "person/tag": ["b", "a"]})
        pulled = db.pull("alice", ["*", "person/missing"])
        assert pulled["person/tag"] == ["b", "a"] and "person/missing" not in pulled
        assert db.pull("alice", ["person/missing"]) == {}


@pytest.mark.parametrize("pattern", ["person/name", [42], ["BAD"], ["person/_"], [{"person/name": ["*"]}],
                                     [{"person/_knows": ["*"]}], [{"a/b": [], "c/d": []}], [{"person/name": "x"}]])
def test_bad_patterns_are_query_errors(pattern):
    with people() as db:
        with pytest.raises(fgraph.QueryError):
            db.pull("alice", pattern)


def test_selectors():
    with people() as db:
        assert db.pull(65, ["person/name"]) == {"person/name": "Alice"}
        with pytest.raises(fgraph.ValueTypeError):
            db.pull({"ref": "alice"}, ["*"])
        with pytest.raises(fgraph.NotFound):
            db.pull("nobody", ["*"])
        with pytest.raises(fgraph.NotFound):
            db.at(64).pull("alice", ["*"])
