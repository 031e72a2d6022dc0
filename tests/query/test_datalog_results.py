"""Proves the result pipeline (fgraph.query.datalog.results, fgraph.query.datalog.ask): the Result mapping,
order as rendered, aggregates with their quirks, deduplication by rendering, paging."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.query.datalog.results import Result, aggregate, sort_key
from tests.support.query_data import people

N = ["?e", "person/name", "?n"]


def test_result_is_an_immutable_mapping_with_attributes():
    result = Result(["?n"], [["Alice"]])
    assert dict(result) == {"columns": ["?n"], "rows": [["Alice"]]} and result.rows == [["Alice"]]
    assert result.to_dict() == {"columns": ["?n"], "rows": [["Alice"]]} and len(result) == 2
    with pytest.raises(AttributeError):
        result.rows = []
    with pytest.raises(TypeError):
        result["rows"] = []


def test_order_compares_renderings_by_rank_then_value():
    mixed = [{"ref": "zz"}, "b", 2, True, {"json": 10}, {"json": 9}, -3, False, "", 1.5, "A", {"bytes": "AA=="},
             {"bytes": "/w=="}]
    assert sorted(mixed, key=sort_key) == [False, True, -3, 1.5, 2, "", "A", "b", {"bytes": "/w=="},
                                           {"bytes": "AA=="}, {"json": 10}, {"json": 9}, {"ref": "zz"}]
    assert sort_key(9007199254740993) > sort_key(9007199254740992.0)
    assert sorted(["😀", "\ue000", "ä", "z"], key=sort_key) == ["z", "ä", "\ue000", "😀"]


def test_aggregates_fold_in_binding_order_with_typed_distinctness():
    assert aggregate("sum", [(3, 1e16), (3, -1e16), (3, 1.0)], "sum(?v)") == 1.0
    assert aggregate("sum", [(3, 1.0), (3, 1e16), (3, -1e16)], "sum(?v)") == 0.0
    assert aggregate("count-distinct", [(2, 1), (3, 1.0), (1, 1), (2, 1)], "x") == 3
    assert aggregate("min", [(0, 70), (0, 65)], "min(?e)") == 65  # refs as stored ids (observed quirk)
    assert aggregate("avg", [(2, 1), (2, 2)], "avg(?v)") == 1.5
    assert aggregate("max", [], "max(?v)") is None and aggregate("count", [], "c") == 0
    with pytest.raises(fgraph.QueryError, match="overflows"):
        aggregate("sum", [(2, 2 ** 63 - 1), (2, 1)], "sum(?v)")
    with pytest.raises(fgraph.QueryError, match="needs numbers"):
        aggregate("sum", [(4, "x")], "sum(?v)")


def test_pipeline_on_people():
    with people() as db:
        assert db.q(find=[["count", "?c"]], where=[["?e", "person/name", "_"], ["?x", "person/city", "?c"]]).rows \
            == [[9]]
        empty = db.q(find=[["count", "?e"], ["sum", "?a"]], where=[["?e", "person/age", "?a"],
                                                                   ["?e", "person/city", "Nowhere"]])
        assert empty.rows == [[0, None]]
        ordered = db.q({"find": ["?s"], "where": [["?e", "person/status", "?s"], ["?e", "person/age", "?a"]],
                        "order": [["?a", "asc"]]})
        assert ordered.rows == [["archived"], ["active"]]
        page = db.q({"find": ["?n"], "where": [N], "order": [["?n", "desc"]], "offset": 1, "limit": 1})
        assert page.rows == [["Bob"]]
        assert db.q(**{"find": ["?n"], "where": [N, ["?e", "person/age", "?a"], [">=", "?a", "?m"]],
                       "in": ["?m"], "args": {"?m": 40}}).rows == [["Bob"]]
        with pytest.raises(fgraph.QueryError, match="not both"):
            db.q({"find": ["?n"], "where": [N]}, find=["?n"])


def test_pull_in_find_collapses_equal_renderings():
    with people() as db:
        rows = db.q(find=[["pull", "?e", ["person/status"]]], where=[N]).rows
        assert sorted(r[0]["person/status"] for r in rows) == ["active", "archived"]
        with pytest.raises(fgraph.QueryError, match="not an entity"):
            db.q(find=[["pull", "?n", ["*"]]], where=[N])


def test_the_published_names_import():
    """Spec 11 §3 / issue 13 item 3: code written against the published library imports unchanged."""
    from fgraph import FGraphError, Result as PublishedResult
    assert FGraphError is fgraph.FgraphError and PublishedResult is Result
    assert fgraph.TypeError is fgraph.ValueTypeError and issubclass(fgraph.TypeError, FGraphError)
    import builtins
    import pathlib
    assert builtins.TypeError is not fgraph.TypeError
    package = pathlib.Path(fgraph.__file__).parent
    assert not [p for p in package.rglob("*.py") if "\nTypeError = " in p.read_text() or "import TypeError" in p.read_text()]
    with pytest.raises(fgraph.TypeError):
        fgraph.connect(":memory:", query_budget=0)
