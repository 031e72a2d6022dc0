"""What the context tests share (tests/query/test_context_*.py): a store of a given number of one-fact
transactions, and what one call costs in SQLite steps."""

from __future__ import annotations

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK


def store_of(transactions: int) -> fgraph.Db:
    """An in-memory store of ``transactions`` transactions, the k-th asserting n/v = k of entity nk."""
    handle = fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK)
    for k in range(transactions):
        handle.transact({"id": f"n{k}", "n/v": k})
    return handle


def vm_steps(handle: fgraph.Db, **options) -> int:
    """SQLite virtual-machine steps one context call takes (a progress handler called every step)."""
    steps = [0]

    def count() -> bool:
        steps[0] += 1
        return False

    handle.connection.set_progress_handler(count, 1)
    try:
        handle.context(**options)
    finally:
        handle.connection.set_progress_handler(None)
    return steps[0]
