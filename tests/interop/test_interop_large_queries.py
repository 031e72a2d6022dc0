"""Queries over a large store agree with the published runtime, work budget included (issue 27).

On small stores budgets never bite; here ``tests/support/query_store.py`` writes a 20,000-transaction
history (hubs, report chains, long histories, many-valued attributes, an excision, undos) and
draws queries whose cost depends on that size. For each query this runtime's exact work is
measured in-process (U units); then both CLIs run it with ``--query-budget U`` (must answer
alike: same rows, in order when ordered, or the same error) and with ``U - 1`` (both must
refuse with ``TooLarge``), so the unit counts are compared clause kind by clause kind where they
matter, not only the answers.

    FGRAPH_LARGE_QUERIES (default 40) queries, FGRAPH_LARGE_TRANSACTIONS (default 20000),
    FGRAPH_QUERY_SEED (default 12); `make torture` runs 400.
"""

from __future__ import annotations

import json
import os
import random

import pytest

import fgraph
from tests.support.query_store import build_store, query, record_work_budgets
from tests.support.runtimes import differential_pair, same_rows

# Where the published runtime spends a unit per examined datom in Python, a query of millions
# of units takes minutes; such a query is compared at the default budget only (both TooLarge).
COMPARED_UP_TO = 1_500_000


@pytest.fixture
def measured_units(monkeypatch):
    """A function giving the work units this runtime spends on a query (None if it is refused)."""
    spent = record_work_budgets(monkeypatch)

    def units(db, q):
        spent.clear()
        try:
            db.q(q)
        except fgraph.FgraphError:
            return None
        return sum(budget.used for budget in spent)

    return units


def test_queries_on_a_large_store_agree_with_budgets_near_the_limit(tmp_path, measured_units):
    ours, theirs, _, seed = differential_pair()
    total = int(os.environ.get("FGRAPH_LARGE_QUERIES", "40"))
    size = int(os.environ.get("FGRAPH_LARGE_TRANSACTIONS", "20000"))
    path = tmp_path / "large.db"
    facts = build_store(str(path), size)
    rng = random.Random(seed)
    mismatches, sent, limited, biting = [], 0, 0, 0
    try:
        with fgraph.connect(str(path), read_only=True, query_budget=10**12) as db:
            for _ in range(total):
                q = query(rng, facts)
                text = json.dumps(q, ensure_ascii=False)
                units = measured_units(db, q)
                budgets = [None]
                if units is not None and units <= COMPARED_UP_TO:
                    budgets = [max(units, 1)] + ([units - 1] if units > 1 else [])
                    biting += units > fgraph_default_budget()
                for budget in budgets:
                    args = ([] if budget is None else ["--query-budget", str(budget)]) + ["--json", "q", text]
                    a, b = ours.run(path, *args).parsed(), theirs.run(path, *args).parsed()
                    sent += 1
                    expected_refusal = budget is not None and budget == units - 1
                    if expected_refusal and a != ("error", "TooLarge"):
                        mismatches.append((f"ours at {budget} (needs {units})", text, a, b))
                    if a[0] != b[0] or (a[0] == "error" and a[1] != b[1]) or \
                            (a[0] == "ok" and not same_rows(q, a[1], b[1])):
                        mismatches.append((f"budget {budget} (ours needs {units})", text, a, b))
                limited += len(budgets) == 2
    finally:
        ours.close()
        theirs.close()
    print(f"\nlarge store: {facts['latest']} transactions, queries: {total}, runs: {sent}, "
          f"compared at U and U-1: {limited}, over the default budget: {biting}, mismatches: {len(mismatches)}")
    assert limited >= total // 2
    assert not mismatches, "\n".join(f"{w}: {q}\n  ours:   {str(a)[:400]}\n  theirs: {str(b)[:400]}"
                                     for w, q, a, b in mismatches[:10])


def fgraph_default_budget() -> int:
    from fgraph.core.limits import DEFAULT_QUERY_BUDGET
    return DEFAULT_QUERY_BUDGET
