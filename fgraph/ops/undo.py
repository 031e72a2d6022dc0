"""Undo: an audited compensating transaction (spec 07 §3).

The inverse is planned with ordinary semantics, so cardinality-one rules apply to
re-assertions and a value re-asserted independently after T is left alone.
"""

from __future__ import annotations

from fgraph.core import values
from fgraph.core.checks import strict_int
from fgraph.core.errors import NotFound, Unsupported
from fgraph.core.genesis import A_UNDOES
from fgraph.core.transact import UNSET, Request
from fgraph.core.values import Value
from fgraph.core.limits import GENESIS_TX, INT64_MAX, INT64_MIN


def undo_request(target, *, by=None, source=None, meta=UNSET, operation_id=None, if_basis_tx=None) -> Request:
    strict_int(target, "transaction {value!r} is not an integer id", "pass the tx number to undo", low=INT64_MIN,
               high=INT64_MAX)
    if target <= GENESIS_TX:
        raise Unsupported(f"transaction {target} cannot be undone", "genesis and earlier ids are not undoable")
    envelope = {"operation": "undo", "tx": target}
    if by is not None:
        envelope["by"] = by
    if source is not None:  # only when given, so a plain undo hashes as fgraph 1.x's does
        envelope["source"] = source
    if meta is not UNSET:
        envelope["meta"] = meta
    return Request([], by=by, source=source, meta=meta, operation_id=operation_id, if_basis_tx=if_basis_tx,
                   hash_envelope=envelope,
                   derived=Inverse(target))


class Inverse:
    """The facts of an undo, derived from the target transaction when the write is planned."""

    __slots__ = ("target",)

    def __init__(self, target: int):
        self.target = target

    def plan(self, planner) -> None:
        """Retract what ``target`` asserted, re-assert what it retracted, and record fgraph/undoes."""
        target = self.target
        cat = planner.cat
        if not cat.is_transaction(target):
            raise NotFound(f"transaction {target} was not found", "use a transaction id returned by transact()")
        conn = cat.conn
        for _fact_id, e, a, v, t in conn.execute(
                "SELECT id, e, a, v, t FROM fgraph_facts INDEXED BY fgraph_txin WHERE tx = ? AND rx IS NULL "
                "AND e != ? ORDER BY id", (target, target)).fetchall():
            slot = planner.slot(e, a)
            planner.remove(slot, (t, v))
        for _fact_id, e, a, v, t in conn.execute(
                "SELECT id, e, a, v, t FROM fgraph_facts INDEXED BY fgraph_txout WHERE rx = ? ORDER BY id",
                (target,)).fetchall():
            blob = cat.blob(v) if t in values.INDIRECT_TAGS else None
            planner.assert_fact(e, a, Value(t, v, blob))
        planner.assert_fact(planner.tx, A_UNDOES, Value(values.TAG_REF, target, None))

