"""Proves the query object's checks (fgraph.query.datalog.syntax): every malformed or unsafe query is a
QueryError naming the offending item, raised before any data is read; explain's lighter
check accepts what only evaluation refuses (spec 12 §9)."""

from __future__ import annotations

import pytest

from fgraph.core.errors import QueryError
from fgraph.query.datalog import syntax

N = ["?e", "person/name", "?n"]


@pytest.mark.parametrize("query,words", [
    ([1], "JSON object"),
    ({"find": ["?n"], "where": [N], "limti": 1}, "limti"),
    ({"find": [], "where": [N]}, "find"),
    ({"find": ["?n"], "where": None}, "where"),
    ({"find": ["?n"], "where": [N], "in": "?x"}, "in must be"),
    ({"find": ["?n"], "where": [N], "source": "past"}, "source"),
    ({"find": ["?n"], "where": [N, [">", "?n"]]}, "two operands"),
    ({"find": ["?n"], "where": [[">", "?a", 1], N]}, "?a"),
    ({"find": ["?n"], "where": [N, {"not": [["?x", "a/b", 1]]}]}, "share a variable"),
    ({"find": ["?x"], "where": [N, {"not": [["?e", "a/b", "?x"]]}]}, "local to a not"),
    ({"find": ["?n"], "where": [N, {"or": [[["?e", "a/b", "?x"]], []]}]}, "same new variables"),
    ({"find": ["?n"], "where": [N, {"rule": ["r", "?e"]}]}, "'r' is not defined"),
    ({"find": ["?n"], "where": [N, {"rule": ["r", "?e", "?f"]}], "rules": [{"head": ["r", "?e"], "body": [N]}]},
     "takes 1 arguments"),
    ({"find": ["?n"], "where": [N], "rules": [{"head": ["r", "?x"], "body": [N]}]}, "?x is not bound"),
    ({"find": ["?n"], "where": [N], "rules": [{"head": ["a", "?e"], "body": [{"rule": ["b", "?e"]}]},
                                               {"head": ["b", "?e"], "body": [{"rule": ["a", "?e"]}]}]},
     "mutually recursive"),
    ({"find": [["count", "?n"], ["pull", "?e", ["*"]]], "where": [N]}, "mixed"),
    ({"find": [["median", "?n"]], "where": [N]}, "median"),
    ({"find": ["?n"], "where": [N], "order": [["?n", "ASC"]]}, "order entry"),
    ({"find": ["?n"], "where": [N], "limit": True}, "limit"),
    ({"find": ["?n"], "where": [N], "offset": None}, "offset"),
    ({"find": ["?n"], "where": [["?e", "person/name"]]}, "3 to 5"),
    ({"find": ["?n"], "where": [{"maybe": []}]}, "not a pattern"),
])
def test_malformed_queries_name_what_is_wrong(query, words):
    with pytest.raises(QueryError) as caught:
        syntax.parse(query)
    assert words in str(caught.value) and caught.value.hint


def test_explain_accepts_what_only_evaluation_refuses():
    lenient = [{"find": ["?n"], "where": [N], "order": "bad", "limit": -4},
               {"find": ["?x"], "where": [N]},
               {"find": ["?n"], "where": [N], "rules": [{"head": ["r", "?x"], "body": []}]}]
    for query in lenient:
        syntax.parse(query, strict=False)
        with pytest.raises(QueryError):
            syntax.parse(query)


def test_a_list_is_a_predicate_only_when_its_head_is_an_operator():
    parsed = syntax.parse({"find": ["?a"], "where": [["==", "?a", 35]]})
    assert isinstance(parsed.where[0], syntax.Pattern) and parsed.where[0].e == "=="
    parsed = syntax.parse({"find": ["?e"], "where": [["?e", "a/b", "_"], ["!=", "?e", 65, ]]})
    assert isinstance(parsed.where[1], syntax.Predicate)


def test_or_binds_what_every_branch_binds_and_not_locals_stay_inside():
    parsed = syntax.parse({"find": ["?e", "?c"], "where": [
        {"or": [[["?e", "p/city", "?c"]], [["?e", "p/name", "?c"], {"not": [["?e", "p/x", "?z"]]}]]}]})
    assert parsed.where[0].binds == ("?c", "?e") and parsed.bound == {"?e", "?c"}
