"""The work budget of one read (spec 12 §10, 13 §9): units are charged as rows are read, and
the read fails with TooLarge as soon as it needs more than the handle's budget."""

from __future__ import annotations

from fgraph.core.errors import TooLarge

RAISE_HINT = "raise --query-budget / FGRAPH_QUERY_BUDGET"


class WorkBudget:
    """``charge(n)`` spends n units; work equal to the limit succeeds, one unit more does not."""

    def __init__(self, limit: int, what: str, narrow: str):
        self.limit, self.used, self.what, self.narrow = limit, 0, what, narrow

    def charge(self, units: int) -> None:
        self.used += units
        if self.used > self.limit:
            raise TooLarge(f"{self.what} exhausted its work budget of {self.limit} units",
                           f"{self.narrow} or {RAISE_HINT}")
