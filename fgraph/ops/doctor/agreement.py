"""Facts agree with their events: every fact is listed by the event that asserted it, and by
the event that retracted it (our addition to spec 06 §3.3; restore checks the same, decision 7).

Driven by the event pass of ``payloads``, which reads every payload once in transaction order:
two fact cursors walk beside it, one in fact-id order (the order of the asserting
transactions) and one in ``rx`` order, so each payload is parsed once for both and no fact
asks for its event with a query of its own. A fact found out of that order (only on a damaged
file) looks its event up. Memory holds one payload's sets.

The rules themselves (``Payload``, the fact keys, ``asserting_agrees``, ``retracting_agrees``)
live in ``fgraph.core.agreement``, where restore reaches them too; they are re-exported here
under the names this module always had.
"""

from __future__ import annotations

from fgraph.core.agreement import (EXCISION_KEYS, UNKNOWN, Payload, asserting_agrees,  # noqa: F401
                                   fact_key, first_disagreement, key, keys as _keys, render as _render,
                                   retracting_agrees, uuid_text, well_formed)
from fgraph.core.limits import GENESIS_TX
from fgraph.core.genesis import A_AT, A_IMPORTED_AT
from fgraph.core.payload import payload_bytes, stored_text

_COLUMNS = ("SELECT {0}, f.e, f.a, f.v, f.t, ie.name, ie.gid, ia.name, b.data, iv.name, iv.gid, f.id "
            "FROM fgraph_facts f LEFT JOIN fgraph_ids ie ON ie.id = f.e LEFT JOIN fgraph_ids ia ON ia.id = f.a "
            "LEFT JOIN fgraph_ids iv ON f.t = 0 AND iv.id = f.v "
            "LEFT JOIN fgraph_blobs b ON f.t IN (7, 8, 9) AND b.hash = f.v ")
# A transaction's own fgraph/at and fgraph/imported-at are its receipt, not listed by its event:
# skipped in SQL (one in four facts of a typical store).
ASSERTED = _COLUMNS.format("f.tx") + (f"WHERE f.tx > {GENESIS_TX} AND NOT (f.e = f.tx AND f.a IN "
                                      f"({A_AT}, {A_IMPORTED_AT})) ORDER BY f.id")
RETRACTED = _COLUMNS.format("f.rx") + f"WHERE f.rx IS NOT NULL AND f.tx > {GENESIS_TX} ORDER BY f.rx"
_AFTER_ALL = float("inf")


class FactWalk:
    """One cursor of facts (asserting or retracting side) consumed up to each event of the pass."""

    def __init__(self, c, asserting: bool):
        self.c, self.asserting = c, asserting
        self.bad = 0
        self.first: tuple | None = None  # (fact id, attribute name) of the lowest disagreeing fact id
        self.rows = c.conn.cursor().execute(ASSERTED if asserting else RETRACTED)
        self.pending = next(self.rows, None)

    def upto(self, tx, payload: Payload | None = None) -> None:
        """Check every pending fact of a transaction ≤ ``tx``; ``payload`` is ``tx``'s, when at hand."""
        row = self.pending
        while row is not None and row[0] <= tx:
            current = row[0]
            if payload is None or current != tx:  # out of transaction order: only on a damaged file
                found = self.c.one(f"SELECT {payload_bytes()} FROM fgraph_events WHERE tx = ?", (current,))
                event = Payload(stored_text(found[0]) if found is not None else None)
            else:
                event = payload
            sets = event.asserting() if self.asserting else event.retracting()
            check = self.asserted if self.asserting else self.retracted
            while row is not None and row[0] == current:
                if sets is not None and not check(row, sets):
                    self.bad += 1
                    if self.first is None or row[11] < self.first[0]:
                        self.first = (row[11], row[7])
                row = next(self.rows, None)
        self.pending = row

    def finish(self) -> int:
        self.upto(_AFTER_ALL)
        return self.bad

    asserted = staticmethod(asserting_agrees)
    retracted = staticmethod(retracting_agrees)
