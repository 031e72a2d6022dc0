"""Proves the planner (fgraph.query.datalog.planner): access labels and ranks of spec 12 §9, runs split
by non-pattern clauses, ties to the lowest ordinal, and the explain warnings."""

from __future__ import annotations

from fgraph.query.datalog import planner

from fgraph.query.datalog import syntax


def steps(where, inputs=()):
    query = syntax.parse({"find": ["?e"], "where": where, "in": list(inputs)}, strict=False)
    return planner.plan(query.where, query.inputs)


def test_access_labels_follow_what_is_bound():
    p = syntax.Pattern
    assert planner.access(p(0, "ada", "a/b", 1), set()) == "eavt/exact"
    assert planner.access(p(0, "ada", "a/b", "?v"), set()) == "eavt/ea"
    assert planner.access(p(0, "?e", "a/b", "?v"), {"?e"}) == "eavt/batch"
    assert planner.access(p(0, "?e", "a/b", "x"), set()) == "avet"
    assert planner.access(p(0, "?e", "?a", "?v"), {"?e"}) == "eavt/e"
    assert planner.access(p(0, "?e", "a/b", "_"), set()) == "avet/a"
    assert planner.access(p(0, "_", "_", "x"), set()) == "value-scan"
    assert planner.access(p(0, "?e", "?a", "?v"), set()) == "scan"


def test_the_spec_example_plan():
    plan = steps([["?e", "person/born", "?b"], ["?e", "person/name", "Ada Lovelace"], [">", "?b", 1800],
                  {"not": [["?e", "person/knows", "?x"]]}])
    clauses, warnings = planner.explain_steps(plan)
    assert clauses == [{"access": "avet", "bound": [], "kind": "pattern", "ordinal": 1},
                       {"access": "eavt/batch", "bound": ["?e"], "kind": "pattern", "ordinal": 0},
                       {"access": "filter", "bound": ["?b", "?e"], "kind": "predicate", "ordinal": 2},
                       {"access": "barrier", "bound": ["?b", "?e"], "kind": "not", "ordinal": 3}]
    assert warnings == []


def test_barriers_split_runs_and_ties_go_to_the_lowest_ordinal():
    plan = steps([["?e", "a/x", "?v"], ["?f", "a/y", "?w"], {"or": [[["?e", "a/z", 1]]]}, ["?e", "?a", "?q"]])
    assert [s.clause.ordinal for s in plan] == [0, 1, 2, 3]
    assert [s.access for s in plan] == ["avet/a", "avet/a", "barrier", "eavt/e"]


def test_scan_warnings_name_the_clause_in_plan_order():
    _, warnings = planner.explain_steps(steps([["?e", "?a", "?v"], ["_", "_", "x"]]))
    assert warnings == ["clause 1 requires a value scan; bind entity or attribute earlier",
                        "clause 0 requires a fact scan; bind entity, attribute, or value earlier"]
