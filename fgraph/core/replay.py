"""Replaying an applied event/1 record as a local transaction (spec 04 §5, README decision 3).

``Replay`` is everything that makes an applied event differ from a direct write, in one
object that the planner and the writer accept: the source event's UUID (the local
transaction's gid), its ``at`` (stored as ``fgraph/imported-at``), its payload (kept
verbatim as the local event), and how its facts are planned — created identities first
(names unify with local ones, eids keep the source's gid), then retractions,
assertions and tx facts. A record is validated by ``fgraph.streams.apply`` before it
gets here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

from fgraph.core import values
from fgraph.core.errors import ValueTypeError
from fgraph.core.identity import uuid_to_gid
from fgraph.core.replay_plan import LeanReplay
from fgraph.core.values import RefWire, Value

if TYPE_CHECKING:
    from fgraph.core.catalog import Catalog
    from fgraph.core.plan import Delta, Planner
    from fgraph.core.schema_cache import SchemaCache
    from fgraph.core.selectors import Handle, NewIdent
    from fgraph.core.types import JSONObject


class ReplayPolicy:
    """A replay's identity policy, passed to the planner: refs to transactions resolve normally,
    and once the record's created identities are allocated (``close``) no other may be."""

    replaying = True

    def __init__(self) -> None:
        self.allocation_closed = False

    def close(self) -> None:
        self.allocation_closed = True


class Replay:
    """One validated event/1 record to commit locally; ``policy`` goes to its planner."""

    __slots__ = ("record", "text", "event", "imported_at", "created", "policy")

    def __init__(self, record: JSONObject, text: str | None = None) -> None:
        self.record = record
        self.text = text                 # the record's canonical text, when the caller has it already
        self.event: str = record["event"]
        self.imported_at: int = record["at"]
        self.created: list[NewIdent] = []   # identities this replay allocates for the record's eids
        self.policy = ReplayPolicy()

    lean = True     # try fgraph.core.replay_plan first (tests turn it off to compare with the general planner)

    def plan_lean(self, catalog: Catalog, schema_cache: SchemaCache) -> tuple[LeanReplay, Delta] | None:
        """(planner, delta) from the lean planner, or None when the record needs the general one."""
        planner = LeanReplay(catalog, schema_cache)
        planned = planner.plan(self.record)
        if planned is None:
            return None
        delta, self.created = planned
        return planner, delta

    def plan(self, planner: Planner) -> None:
        record = self.record
        self.policy.allocation_closed = False  # a retried plan starts open again
        for sel in record["created"]:
            if isinstance(sel, str):
                planner.named(sel, allocate=True)
                continue
            eid = sel["eid"]
            found: Handle | None = planner.cat.id_by_gid(uuid_to_gid(eid))
            if found is None:
                found = planner.allocate_listed(eid)
                self.created.append(found)
            planner.eid_overrides[eid] = found
        self.policy.close()
        for e, a, value, tag in record["retracted"]:
            planner.item += 1
            target = planner.entity(e, allocate=False)
            attr = planner.attribute(a, allocate=False)
            decoded = _resolve(planner, values.from_tagged(value, tag), allocate=False)
            if target is not None and attr is not None and decoded is not None:
                planner.remove(planner.slot(target, attr), (decoded.t, decoded.v))
        for e, a, value, tag in record["asserted"]:
            planner.item += 1
            target = planner.entity(e, allocate=True)
            planner.writable(target)
            _assert(planner, target, planner.attribute(a, allocate=True), values.from_tagged(value, tag))
        planner.item += 1
        for a, value, tag in record.get("tx_facts", ()):
            _assert(planner, planner.tx, planner.attribute(a, allocate=True), values.from_tagged(value, tag))

    def check(self, delta: Delta) -> None:
        """Every eid the record lists as created is used by its facts (decision 3)."""
        kept = {id(n) for n in delta.new}
        for ident in self.created:
            if id(ident) not in kept:
                raise ValueTypeError(f"the event creates {ident.key[6:]} but never uses it",  # type: ignore[index]  # a listed eid's key is "event:" + eid
                                     "a valid event only lists identities its facts use")


@overload
def _resolve(planner: Planner, decoded: Value | RefWire, allocate: Literal[True]) -> Value: ...


@overload
def _resolve(planner: Planner, decoded: Value | RefWire, allocate: bool) -> Value | None: ...


def _resolve(planner: Planner, decoded: Value | RefWire, allocate: bool) -> Value | None:
    if isinstance(decoded, RefWire):
        target = planner.entity(decoded.selector, allocate=allocate)
        return None if target is None else Value(values.TAG_REF, target, None)
    return decoded


def _assert(planner: Planner, e: Handle, a: Handle, decoded: Value | RefWire) -> None:
    value = _resolve(planner, decoded, allocate=True)
    planner.check_type_now(e, a, value)
    planner.assert_fact(e, a, value)
