"""Proves the work budget (fgraph/query/budget.py): work equal to the limit succeeds, one unit more
is TooLarge naming the budget and how to narrow or raise it; and a handle's budget governs q."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.query.budget import WorkBudget


def test_the_limit_itself_is_allowed_one_more_is_not():
    budget = WorkBudget(10, "query", "bind an entity first")
    budget.charge(4)
    budget.charge(6)
    assert budget.used == 10
    with pytest.raises(fgraph.TooLarge) as refused:
        budget.charge(1)
    assert "query exhausted its work budget of 10 units" in str(refused.value)
    assert refused.value.hint == "bind an entity first or raise --query-budget / FGRAPH_QUERY_BUDGET"


def test_a_handle_budget_bounds_its_queries(tmp_path):
    with fgraph.connect(str(tmp_path / "b.db")) as db:
        db.transact([{"id": f"p{i}", "person/age": i} for i in range(20)])
    query = {"find": ["?e"], "where": [["?e", "person/age", "?a"]]}
    with fgraph.connect(str(tmp_path / "b.db"), read_only=True, query_budget=10_000) as db:
        assert len(db.q(query)["rows"]) == 20
    with fgraph.connect(str(tmp_path / "b.db"), read_only=True, query_budget=5) as db:
        with pytest.raises(fgraph.TooLarge):
            db.q(query)
