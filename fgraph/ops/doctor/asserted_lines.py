"""The asserting agreement walk on the snapshot's own fact lines: backup's one pass.

A snapshot fact line is ``[entity, attribute, value, tag, tx event, rx event]``, its first four
items the canonical bytes the asserting walk of ``agreement`` compares with the event that
asserted the fact, and both go through the facts in id order. So while the logical digest is
computed, this observer checks each fact against its asserting event's payload (read beside
it, in transaction order) with the texts the line was made of, instead of rendering every fact
a second time; the copy is read once for both.

The answer must be exactly what ``FactWalk(c, asserting=True)`` would count. Where the line's
bytes could differ from the walk's (an attribute without a name: the walk writes ``null``, the
line an eid), the pass gives up with ``Undecided`` and the caller walks the plain way; any
other damage stops the snapshot itself, with the same outcome. Facts the walk leaves out (a
transaction's own ``fgraph/at`` and ``fgraph/imported-at``) are skipped here too; facts the
snapshot leaves out (a transaction after the basis, the latest event) have no event, so the
walk does not count them either.
"""

from __future__ import annotations

from fgraph.core.genesis import A_AT, A_BY, A_EXCISED, A_IMPORTED_AT, A_META, A_SOURCE
from fgraph.core.payload import payload_bytes, stored_text
from fgraph.ops.doctor.agreement import Payload
from fgraph.streams.snapshot import FactObserver

_EVENTS = f"SELECT tx, {payload_bytes()} FROM fgraph_events ORDER BY tx"
_EVENT = f"SELECT {payload_bytes()} FROM fgraph_events WHERE tx = ?"
_NOT_WALKED = (A_AT, A_IMPORTED_AT)
_SINGLE = (A_BY, A_SOURCE, A_META)


class Undecided(Exception):
    """The line's bytes may differ from the walk's for this fact: walk the plain way instead."""


class AssertedLines(FactObserver):
    """Counts facts the event that asserted them does not list; ``bad`` and ``first`` (fact id,
    attribute name of the lowest disagreeing fact) as ``FactWalk`` has them."""

    def __init__(self, conn):
        self.conn = conn
        self.bad = 0
        self.first: tuple | None = None
        self.events = conn.cursor().execute(_EVENTS)
        self.next_event = next(self.events, None)
        self.tx = self.sets = None

    def fact(self, fact_id, e, a, tx, a_name, entity: str, attribute: str, value: str, tag: str) -> None:
        if e == tx and a in _NOT_WALKED:
            return
        if tx != self.tx:
            self.tx, self.sets = tx, self._sets(tx)
        sets = self.sets
        if sets is None:  # redacted, unparsable or no event: proves nothing
            return
        if a_name is None:
            raise Undecided(f"fact {fact_id} has an attribute without a name")
        if e != tx:
            ok = ("[%s,%s,%s,\"%s\"]" % (entity, attribute, value, tag)).encode() in sets["asserted"]
        elif a == A_EXCISED and sets["excision"]:
            ok = True
        elif a in _SINGLE:
            ok = ("[%s]" % value).encode() == sets[a]
        else:
            ok = ("[%s,%s,\"%s\"]" % (attribute, value, tag)).encode() in sets["tx_facts"]
        if not ok:
            self.bad += 1
            if self.first is None:  # facts come in id order: the first found is the lowest
                self.first = (fact_id, a_name)

    def _sets(self, tx):
        """The asserting sets of ``tx``'s event, read from the cursor in transaction order, or
        looked up when a fact comes out of that order (only on a damaged file)."""
        found = self.next_event
        while found is not None and found[0] < tx:
            found = next(self.events, None)
        self.next_event = found
        if found is not None and found[0] == tx:
            text = stored_text(found[1])
        else:
            row = self.conn.execute(_EVENT, (tx,)).fetchone()
            text = stored_text(row[0]) if row is not None else None
        return Payload(text).asserting()

    def result(self) -> tuple[int, tuple | None]:
        return self.bad, self.first
