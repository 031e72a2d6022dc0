"""Datasets of spec 12 for the query tests: P (three people) and a chain of refs."""

from __future__ import annotations

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK

CLOCK = CONFORMANCE_CLOCK
P = [{"id": "alice", "person/active": True, "person/name": "Alice", "person/age": 35, "person/city": "Lyon",
      "person/status": "active"},
     {"id": "bob", "person/active": False, "person/name": "Bob", "person/age": 42, "person/city": "Metz",
      "person/status": "active"},
     {"id": "charlie", "person/active": True, "person/name": "Charlie", "person/age": 30, "person/city": "Paris",
      "person/status": "archived"}]


def people(path=":memory:", **options) -> "fgraph.Db":
    db = fgraph.connect(path, clock=CLOCK, **options)
    db.transact(P)
    return db


def chain(db, n: int, attribute: str = "p/parent") -> None:
    db.declare(attribute, type="ref")
    db.transact([{"id": f"n{i}", attribute: {"ref": f"n{i + 1}"}} for i in range(n)] + [{"id": f"n{n}", "p/x": 1}])


def smallest_budget(make_db, query) -> int:
    """The smallest work budget under which ``query`` succeeds (spec 12 §10's measure)."""
    lo, hi = 1, 100_000
    while lo < hi:
        mid = (lo + hi) // 2
        with make_db(mid) as db:
            try:
                db.q(query)
                hi = mid
            except fgraph.TooLarge:
                lo = mid + 1
    return lo
