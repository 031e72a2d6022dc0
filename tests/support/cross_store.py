"""A store whose attributes share no entity, for queries over cross products (issue 52 item 4).

``build_cross_store(path, titles, knows, notes)`` writes ``titles`` people with a ``person/title``,
``knows`` ``person/knows`` facts (ten per knower, all to those people) and ``notes`` notes with a
``note/text`` (and retracts the first ref of ``retracted`` knowers; ``history`` tags of one entity,
all but one retracted): a query naming two or three of these attributes in clauses that share no variable
examines their product (spec 12 §10: n bindings that each examine k datoms cost n·k).
"""

from __future__ import annotations

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.query_store import record_work_budgets

BATCH = 1000
TITLE = {"find": ["?t"], "where": [["?p", "person/title", "?t"], ["?x", "person/knows", "?q"]]}
THREE = {"find": ["?t", "?n"], "where": [["?p", "person/title", "?t"], ["?x", "person/knows", "?q"],
                                         ["?m", "note/text", "?n"]]}


def build_cross_store(path: str, titles: int, knows: int, notes: int = 0, retracted: int = 0, history: int = 0) -> None:
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        db.declare("person/knows", type="ref", many=True)
        people = [{"id": f"p{i}", "person/title": f"Title {i % 97}"} for i in range(titles)]
        knowers = [{"id": f"k{m}", "person/knows": [{"ref": f"p{(m * 10 + r) % titles}"} for r in range(10)]}
                   for m in range(knows // 10)]
        written = [{"id": f"n{i}", "note/text": f"note {i % 13}"} for i in range(notes)]
        for records in (people, knowers, written):
            for start in range(0, len(records), BATCH):
                db.transact(records[start:start + BATCH])
        if history:  # one live person/tag and ``history - 1`` retracted ones, all in its index range
            db.declare("person/tag", many=True)
            db.transact({"id": "h", "person/tag": [f"tag {i}" for i in range(history)]})
            db.transact([["retract", "h", "person/tag", f"tag {i}"] for i in range(1, history)])
        if retracted:  # history then holds retraction datoms too
            db.transact([["retract", f"k{m}", "person/knows", {"ref": f"p{(m * 10) % titles}"}] for m in range(retracted)])


def spending_recorder(monkeypatch, ceiling: int = 10**12):
    """A function giving the work units a query spends on this runtime, in-process, under a budget
    of ``ceiling`` (None when it is refused)."""
    spent = record_work_budgets(monkeypatch)

    def measure(path, query) -> int | None:
        spent.clear()
        with fgraph.connect(str(path), read_only=True, query_budget=ceiling) as db:
            try:
                db.q(query)
            except fgraph.TooLarge:
                return None
        return sum(budget.used for budget in spent)

    return measure
