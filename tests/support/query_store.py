"""A large, realistic store and queries over it, for the budget-aware query differential test.

The store (``build_store``) is a history of ``transactions`` transactions (20,000 by default) over
people, companies, cities, projects and notes: refs, report chains up to depth 30, hubs (a few
people everyone knows, one city most live in), many-valued tags, long histories (a status and a
counter rewritten thousands of times), retractions, an excision and undos. The queries
(``query``) are the shapes whose cost or order depends on that size: transaction positions bound
to a constant or a join variable, entity positions bound to plain values, ``not``/``or`` over value
variables, rules over the chains, aggregates, ``order`` on keys that tie and on variables outside
``find``, in both sources.
"""

from __future__ import annotations

import random

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK

CITIES = [f"city{i}" for i in range(20)]
COMPANIES = [f"co{i}" for i in range(50)]
TAGS = ["ai", "db", "ops", "ux", "ml", "web", "infra", "sec"]
STATUS = ["active", "away", "archived", "new"]
DECLARATIONS = [
    ("person/email", {"type": "text", "unique": True}),
    ("person/knows", {"type": "ref", "many": True}),
    ("person/reports-to", {"type": "ref"}),
    ("person/lives-in", {"type": "ref"}),
    ("person/works-at", {"type": "ref"}),
    ("person/tag", {"many": True}),
    ("project/member", {"type": "ref", "many": True}),
    ("project/owner", {"type": "ref"}),
    ("note/about", {"type": "ref"}),
]
ATTRIBUTES = ["person/name", "person/age", "person/email", "person/knows", "person/reports-to",
              "person/lives-in", "person/works-at", "person/tag", "person/status", "project/name",
              "project/member", "project/owner", "note/text", "note/about", "city/name", "company/name",
              "counter/value"]
RULES = [
    {"head": ["under", "?x", "?boss"], "body": [["?x", "person/reports-to", "?boss"]]},
    {"head": ["under", "?x", "?boss"], "body": [["?x", "person/reports-to", "?m"], {"rule": ["under", "?m", "?boss"]}]},
    {"head": ["local", "?p", "?c"], "body": [["?p", "person/lives-in", "?c"]]},
]


def people_count(transactions: int) -> int:
    return max(40, transactions // 25)


def build_store(path: str, transactions: int = 20_000, seed: int = 27) -> dict:
    """Write the store to ``path``; returns facts about it the query generator draws on."""
    rng = random.Random(seed)
    n_people = people_count(transactions)
    people = [f"p{i}" for i in range(n_people)]
    written = 0
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        for attr, options in DECLARATIONS:
            db.declare(attr, **options)
        db.transact([{"id": c, "city/name": c.title()} for c in CITIES])
        db.transact([{"id": c, "company/name": c.upper(), } for c in COMPANIES])
        written += 2 + len(DECLARATIONS)
        hubs = people[:3]
        for i, p in enumerate(people):
            record = {"id": p, "person/name": f"Name{i % 97}", "person/age": 20 + i % 50,
                      "person/email": f"{p}@x.org", "person/status": rng.choice(STATUS),
                      "person/lives-in": {"ref": CITIES[0] if rng.random() < 0.5 else rng.choice(CITIES)},
                      "person/works-at": {"ref": rng.choice(COMPANIES)},
                      "person/tag": rng.sample(TAGS, rng.randint(0, 3)),
                      "person/knows": [{"ref": h} for h in hubs if h != p and rng.random() < 0.8]}
            if i >= 30:  # chains: p30 reports to p29 ... down to p0, then random bosses
                record["person/reports-to"] = {"ref": people[i - 1] if i < 60 else rng.choice(people[:i])}
            elif i > 0:
                record["person/reports-to"] = {"ref": people[i - 1]}
            db.transact(record)
            written += 1
        projects = [f"proj{i}" for i in range(max(10, n_people // 10))]
        for j, pr in enumerate(projects):
            db.transact({"id": pr, "project/name": f"Project {j % 17}", "project/owner": {"ref": rng.choice(people)},
                         "project/member": [{"ref": m} for m in rng.sample(people, 4)]})
            written += 1
        note = 0
        while written < transactions - 4:
            roll = rng.random()
            p = rng.choice(people)
            try:
                if roll < 0.30:
                    db.transact({"id": "counter", "counter/value": written})
                elif roll < 0.45:
                    db.transact({"id": p, "person/status": rng.choice(STATUS)})
                elif roll < 0.55:
                    db.transact({"id": p, "person/age": rng.randint(18, 80)})
                elif roll < 0.65:
                    db.transact({"id": p, "person/tag": [rng.choice(TAGS)]})
                elif roll < 0.70:
                    db.transact([["retract", p, "person/tag", rng.choice(TAGS)]])
                elif roll < 0.75:
                    db.transact([["retract", p, "person/knows"]])
                elif roll < 0.80:
                    db.transact({"id": p, "person/knows": [{"ref": rng.choice(people)}]})
                else:
                    note += 1
                    db.transact({"id": f"n{note}", "note/text": rng.choice(["met", "call", "lunch", "todo"]),
                                 "note/about": {"ref": rng.choice(people + projects)}})
            except fgraph.FgraphError:
                pass  # a retraction of nothing: the history goes on
            written += 1
        db.excise(people[-1])
        latest = db.latest_tx()
        for tx in (latest - 3, latest - 7):
            try:
                db.undo(tx)
            except fgraph.FgraphError:
                pass
        latest = db.latest_tx()
    return {"people": people, "projects": projects, "latest": latest, "notes": note}


def _entity(rng, facts):
    return rng.choice(facts["people"][:40] + facts["projects"][:5] + CITIES[:3] + ["counter", "missing"])


def query(rng: random.Random, facts: dict) -> dict:
    """One query of the shapes that matter on a large store."""
    latest = facts["latest"]
    tx = rng.choice([latest, latest - 1, latest - 100, 66, 64, rng.randint(64, latest)])
    p = _entity(rng, facts)
    shapes = [
        lambda: {"find": ["?a"], "where": [["?e", "?a", "?v", tx]]},
        lambda: {"find": ["?e", "?a"], "where": [["?e", "?a", "?v", tx]], "order": [["?e", "asc"]]},
        lambda: {"find": ["?a", "?tx"], "where": [[p, "?a", "?v", "?tx"], ["?e", "counter/value", "?c", "?tx"]]},
        lambda: {"find": ["?v", "?tx"], "where": [[p, "person/status", "?v", "?tx"]], "source": "history",
                 "order": [["?tx", rng.choice(["asc", "desc"])]]},
        lambda: {"find": ["?e", "?v"], "where": [[p, "person/age", "_", "?tx"], ["?e", "?a", "?v", "?tx"]]},
        lambda: {"find": ["?p"], "where": [["?p", "person/age", "?a"], ["?a", "person/name", "_"]]},
        lambda: {"find": ["?p"], "where": [["?p", "person/status", "?s"], {"not": [["?s", "person/name", "_"]]}]},
        lambda: {"find": ["?p"], "where": [["?p", "person/name", "?n"],
                                            {"or": [[["?n", "person/age", "_"]], [["?p", "person/age", 30]]]}]},
        lambda: {"find": ["?n"], "where": [{"rule": ["under", "?x", p]}, ["?x", "person/name", "?n"]],
                 "rules": RULES, "order": [["?n", "asc"]], "limit": rng.choice([None, 5])},
        lambda: {"find": ["?t"], "where": [["?p", "person/tag", "?t"], ["?p", "person/age", "?a"]],
                 "order": [["?a", rng.choice(["asc", "desc"])]]},
        lambda: {"find": ["?s", ["count", "?p"]], "where": [["?p", "person/status", "?s"], ["?p", "person/age", "?a"]],
                 "order": [["?a", rng.choice(["asc", "desc"])]], "limit": rng.choice([None, 2])},
        lambda: {"find": [["count", "?a"]], "where": [["?p", "person/age", "?a"], [">", "?a", rng.choice([70, 200])]],
                 "order": [["?p", "asc"]]},
        lambda: {"find": ["?c"], "where": [["?p", "person/lives-in", "?c"], ["?p", "person/status", "?s"]],
                 "order": [["?s", rng.choice(["asc", "desc"])]], "offset": rng.choice([0, 1])},
        lambda: {"find": ["?e", "?tx"], "where": [["?e", "person/status", "away", "?tx"]], "source": "history",
                 "order": [["?tx", rng.choice(["asc", "desc"])]], "limit": 20},
        lambda: {"find": ["?name"], "where": [["?p", "person/knows", {"ref": rng.choice(facts["people"][:3])}],
                                               ["?p", "person/name", "?name"]], "order": [["?name", "asc"]]},
        lambda: {"find": ["?v"], "where": [["counter", "counter/value", "?v", "?tx", rng.choice([True, False])]],
                 "source": "history", "order": [["?tx", "desc"]], "limit": 3},
        lambda: {"find": ["?a", ["count", "?e"]], "where": [["?e", "?a", "_", tx]], "source": rng.choice(["current", "history"])},
        lambda: {"find": ["?x"], "where": [["?n", "note/about", "?x"], ["?x", "person/age", "?a"],
                                            ["?a", "person/tag", "_"]]},
        lambda: {"find": [["pull", "?e", ["person/name", "person/_knows"]]],
                 "where": [["?e", "person/email", f"{p}@x.org"]]},
        lambda: {"find": ["?s"], "where": [["?p", "person/status", "?s", "?tx"], [">", "?tx", latest - 50]],
                 "source": "history", "order": [["?tx", "asc"]]},
    ]
    return rng.choice(shapes)()


def record_work_budgets(monkeypatch) -> list:
    """Every WorkBudget the query engine makes from now on, in a list the caller clears between
    queries: the units a query spent on this runtime are ``sum(budget.used for budget in it)``."""
    import fgraph.query.datalog.engine as engine_module  # noqa: PLC0415 - only the tests that measure patch it

    made: list = []

    class Recording(engine_module.WorkBudget):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(engine_module, "WorkBudget", Recording)
    return made
