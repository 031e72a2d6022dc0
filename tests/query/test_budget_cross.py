"""Proves a query over a cross product costs about its budget's work, not its product's (issue 52
item 4): the engine counts a pattern's examined datoms only until they pass the budget left, and
reads a pattern that shares no variable with the bindings once, charging it per binding. So
SQLite's work (its virtual-machine instructions, counted through a progress handler, never timed)
stays within a few dozen per budget unit when a query is refused, however large the product, and
within a few dozen per unit spent when it is answered, however long the history in the index
range it reads; and the units are still exact at the limit (spec 12 §10)."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.cross_store import THREE, TITLE, build_cross_store, spending_recorder

STEP = 100          # a progress handler call every STEP virtual-machine instructions
PER_UNIT = 50       # instructions a refused query may spend per budget unit (measured: about 11)
MESSAGE = ("query exhausted its work budget of {} units; narrow the query (bind an entity or attribute earlier, "
           "add limits) or raise --query-budget / FGRAPH_QUERY_BUDGET")


def refused_after(path, query, budget: int) -> int:
    """The virtual-machine instructions (in STEPs) ``query`` runs before its TooLarge."""
    with fgraph.connect(str(path), read_only=True, query_budget=budget) as db:
        steps = [0]

        def tick() -> bool:
            steps[0] += 1
            return False

        db.connection.set_progress_handler(tick, STEP)
        with pytest.raises(fgraph.TooLarge) as refused:
            db.q(query)
        db.connection.set_progress_handler(None)
    assert str(refused.value) == MESSAGE.format(budget)
    return steps[0]


@pytest.fixture
def units(monkeypatch):
    return spending_recorder(monkeypatch)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("cross")
    made = {}
    for name, titles, knows, notes in (("small", 100, 2000, 0), ("large", 100, 20000, 0), ("three", 100, 200, 500),
                                       ("exact", 20, 100, 30), ("titles", 10000, 0, 0), ("history", 2000, 0, 0)):
        made[name] = root / f"{name}.db"
        build_cross_store(str(made[name]), titles, knows, notes, retracted=5 if name == "exact" else 0,
                          history=2000 if name == "history" else 0)
    return made


def test_a_two_clause_cross_product_is_refused_after_about_the_budgets_work(stores):
    # 100 titles x 2,000 and x 20,000 knows: products of 200,000 and 2,000,000 units, budget 5,000
    small, large = refused_after(stores["small"], TITLE, 5000), refused_after(stores["large"], TITLE, 5000)
    assert large * STEP <= PER_UNIT * 5000, (small, large)       # old code: about 100,000 steps
    assert large <= 1.5 * small + 10, (small, large)             # old code: ten times the small store's


def test_refusing_stays_within_each_budget(stores):
    for budget in (5000, 50000):                                 # old code: 100,000 steps at either
        assert refused_after(stores["large"], TITLE, budget) * STEP <= PER_UNIT * budget


def test_a_join_on_a_shared_value_is_refused_after_about_the_budgets_work(stores):
    # 10,000 people share 97 titles: about 1,030,000 (person, person) pairs, budget 20,000
    same = {"find": ["?p"], "where": [["?p", "person/title", "?t"], ["?q", "person/title", "?t"]]}
    assert refused_after(stores["titles"], same, 20000) * STEP <= PER_UNIT * 20000   # old code: about 100 per unit


def test_a_three_clause_cross_product_stops_at_the_third_clause_budget(stores):
    # 100 + 100 x 200 units fit in 30,000; the third clause would examine 20,000 x 500 datoms
    assert refused_after(stores["three"], THREE, 30000) * STEP <= PER_UNIT * 30000


def test_an_answered_cross_product_costs_its_units_not_the_history_beside_them(stores, units):
    # 2,000 titles x one live tag: 4,000 units; the tag's 1,999 retracted datoms share its index range
    query = {"find": ["?t", "?g"], "where": [["?p", "person/title", "?t"], ["?h", "person/tag", "?g"]]}
    needed = units(stores["history"], query)
    assert needed == 4000
    with fgraph.connect(str(stores["history"]), read_only=True, query_budget=needed) as db:
        steps = [0]

        def tick() -> bool:
            steps[0] += 1
            return False

        db.connection.set_progress_handler(tick, STEP)
        assert len(db.q(query)["rows"]) == 97
        db.connection.set_progress_handler(None)
    assert steps[0] * STEP <= 4 * PER_UNIT * needed, steps[0]   # about 50 per unit; old code: about 8,000


@pytest.mark.parametrize("query", [
    TITLE, THREE,
    {"find": ["?t"], "where": [["?p", "person/title", "?t"], ["?e", "?a", "?v"]]},   # a fact scan per binding
    dict(TITLE, source="history"),                                                 # two branches per pattern
], ids=["two", "three", "scan", "history"])
def test_a_cross_product_that_fits_costs_its_exact_units(stores, units, query):
    needed = units(stores["exact"], query)
    assert needed > 1000
    with fgraph.connect(str(stores["exact"]), read_only=True, query_budget=needed) as db:
        db.q(query)
    with fgraph.connect(str(stores["exact"]), read_only=True, query_budget=needed - 1) as db:
        with pytest.raises(fgraph.TooLarge):
            db.q(query)
