"""Queries over cross products agree with the published runtime, outcome and units (issue 52 item 4).

Our engine stops counting a pattern's examined datoms once they pass the budget left; this checks
that doing so changed no outcome and no unit count. On stores of ``tests/support/cross_store.py``
(two or three clauses sharing no variable, a fact scan per binding, the history source with
retractions), each query runs on both CLIs at the default budget, at ``--query-budget 325000`` and,
when this runtime's exact work U (measured in-process) is at most COMPARED_UP_TO, at U (both must
answer alike) and U - 1 (both must refuse with ``TooLarge``). ``make test`` runs every query on the
small store and the two- and three-clause ones on the others (about a minute with the published
runtime); FGRAPH_TORTURE=full (``make torture``) runs every query on every store.
"""

from __future__ import annotations

import json

import pytest

from tests.support.cross_store import THREE, TITLE, build_cross_store, spending_recorder
from tests.support.runtimes import differential_pair, same_rows
from tests.support.torture import FULL

COMPARED_UP_TO = 400_000
QUERIES = {
    "two": TITLE,
    "three": THREE,
    "scan": {"find": ["?t"], "where": [["?p", "person/title", "?t"], ["?e", "?a", "?v"]]},
    "history": dict(TITLE, source="history"),
    "knows-first": {"find": ["?q", "?t"], "where": [["?x", "person/knows", "?q"], ["?p", "person/title", "?t"]]},
}
# (titles, knows, notes, retracted): small products that fit; 300 x 1,000 = 300,300 units, which
# the default budget refuses and 325,000 allows; and a product far over every budget
STORES = {"small": (20, 100, 30, 5), "medium": (300, 1000, 40, 0), "large": (2000, 20000, 50, 0)}
BOUNDED = ("two", "three")  # what make test runs beyond the small store


@pytest.mark.parametrize("store", sorted(STORES))
def test_cross_products_agree_with_the_published_runtime(tmp_path, monkeypatch, store):
    ours, theirs, _, _ = differential_pair()
    path = tmp_path / f"{store}.db"
    titles, knows, notes, retracted = STORES[store]
    build_cross_store(str(path), titles, knows, notes, retracted)
    measure = spending_recorder(monkeypatch, ceiling=COMPARED_UP_TO)
    mismatches, runs = [], 0
    try:
        for name, q in QUERIES.items():
            if not (FULL or store == "small" or name in BOUNDED):
                continue
            text = json.dumps(q)
            units = measure(path, q)
            budgets = [None, 325_000] + ([units, units - 1] if units else [])
            for budget in budgets:
                args = ([] if budget is None else ["--query-budget", str(budget)]) + ["--json", "q", text]
                a, b = ours.run(path, *args).parsed(), theirs.run(path, *args).parsed()
                runs += 1
                if units and budget == units - 1 and a != ("error", "TooLarge"):
                    mismatches.append((f"{name}: ours at {budget} (needs {units})", a, b))
                if a[0] != b[0] or (a[0] == "error" and a[1] != b[1]) or \
                        (a[0] == "ok" and not same_rows(q, a[1], b[1])):
                    mismatches.append((f"{name}: budget {budget} (ours needs {units})", a, b))
    finally:
        ours.close()
        theirs.close()
    print(f"\ncross products on {store}: runs {runs}, mismatches {len(mismatches)}")
    assert not mismatches, "\n".join(f"{w}\n  ours:   {str(a)[:300]}\n  theirs: {str(b)[:300]}"
                                     for w, a, b in mismatches)
