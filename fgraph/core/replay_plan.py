"""The lean planner of a replayed event (issue 34): the common shape without the general planner.

A record that ``fgraph.streams.apply`` replays was planned once already by its source: its
facts are canonical, its identities listed, its supersessions spelled out as retractions.
What the receiver must still decide is what its own state makes of them — names that unify
with its identities, values it already holds, cardinality-one values it holds that the record
supersedes, unique values another entity holds. ``LeanReplay.plan`` decides exactly that, with
the general planner's data model (``Slot``, the shared ``SchemaCache``, one sequence for
removals and assertions, ``Delta``), so the writer commits the same rows in the same order.

It takes only records it can decide without doubt: any item that touches a system identity,
a reserved name, a vector whose dimension or type is inferred, transaction facts, a store with
shapes, or any state the general planner would refuse (a conflict, a type mismatch, an unknown
or unwritable identity, a created eid no fact uses) makes ``plan`` return None, and the record
is planned again from the start by ``fgraph.core.plan.Planner`` — which then commits it or
raises its error, so every refusal keeps the general planner's wording and precedence.
tests/core/test_overlay.py proves both give the same bytes on random histories.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Literal, overload

from fgraph.core.values import TYPE_TAGS
from fgraph.core.genesis import A_SHAPE, SYSTEM_MAX
from fgraph.core.identity import uuid_to_gid
from fgraph.core.plan import Delta, NewIdent, Planner, Slot, nohistory_of, read_live
from fgraph.core.values import TAG_REF, TAG_VECTOR, RefWire, Value, from_tagged

if TYPE_CHECKING:
    from fgraph.core.catalog import Catalog
    from fgraph.core.schema_cache import SchemaCache
    from fgraph.core.selectors import Handle, ValueKey
    from fgraph.core.types import JSON, JSONObject

RESERVED_PREFIX = "fgraph/"


class Undecided(Exception):
    """The record needs the general planner (never leaves this module)."""


class LeanReplay:
    """Plans one replayed record into a ``Delta``; exposes what ``Commit`` reads of a planner
    (``tx``, ``fact_tx``, ``nohistory``, ``schema_changed``)."""

    schema_changed = False

    def __init__(self, catalog: Catalog, schema_cache: SchemaCache) -> None:
        self.cat = catalog
        self.schema_cache = schema_cache
        self.tx = NewIdent("tx", None)
        self.fact_tx: dict[int, int] = {}
        self._general: Planner | None = None

    # -- what Commit reads ------------------------------------------------------------
    def nohistory(self, a: Handle) -> bool:
        return nohistory_of(self.schema(a))

    def schema(self, a: Handle) -> dict[str, Any]:
        if not isinstance(a, int):
            return NEW_ATTRIBUTE
        found = self.schema_cache.schemas.get(a)
        if found is None:
            if self._general is None:
                self._general = Planner(self.cat, schema_cache=self.schema_cache)
            found = self._general.schema(a)   # the general planner's reading, kept in the shared cache
        return found

    # -- planning ---------------------------------------------------------------------
    def plan(self, record: JSONObject) -> tuple[Delta, list[NewIdent]] | None:
        """The delta of ``record`` and the identities it allocates for listed eids, or None."""
        try:
            return self._plan(record)
        except Undecided:
            return None

    def _plan(self, record: JSONObject) -> tuple[Delta, list[NewIdent]]:
        if record.get("tx_facts"):
            raise Undecided()
        cache = self.schema_cache
        if cache.has_shapes is None:
            cache.has_shapes = self.cat.has_live_attribute(A_SHAPE)
        if cache.has_shapes:
            raise Undecided()
        self.seq = itertools.count()
        self.new: list[NewIdent] = []
        self.names: dict[str, Handle] = {}
        self.eids: dict[str, Handle] = {}
        self.slots: dict[tuple[Handle, Handle], Slot] = {}
        self.dirty: dict[int, Slot] = {}
        self.owners: dict[tuple[Handle, ValueKey], list[Handle]] = {}
        listed: list[NewIdent] = []
        for sel in record["created"]:
            if type(sel) is str:
                self._name(sel, allocate=True)
            else:
                eid = sel["eid"]
                found: Handle | None = self.cat.id_by_gid(uuid_to_gid(eid))
                if found is None:
                    found = NewIdent("tmp", "event:" + eid)
                    found.gid = uuid_to_gid(eid)
                    self.new.append(found)
                    listed.append(found)
                self.eids[eid] = found
        for e, a, raw, tag in record["retracted"]:
            self._retract(e, a, raw, tag)
        for e, a, raw, tag in record["asserted"]:
            self._assert(e, a, raw, tag)
        delta = self._finish()
        kept = {id(n) for n in delta.new}
        if any(id(ident) not in kept for ident in listed):
            raise Undecided()     # a created eid no fact uses: the general planner says so
        return delta, listed

    def _name(self, name: str, allocate: bool) -> Handle | None:
        found = self.names.get(name)
        if found is not None:
            return found
        if name.startswith(RESERVED_PREFIX):
            raise Undecided()
        found = self.cat.id_by_name(name)
        if found is None:
            if not allocate:
                return None
            found = NewIdent("name", name)
            self.new.append(found)
        self.names[name] = found
        return found

    @overload
    def _entity(self, sel: JSON, allocate: Literal[True]) -> Handle: ...

    @overload
    def _entity(self, sel: JSON, allocate: bool) -> Handle | None: ...

    def _entity(self, sel: JSON, allocate: bool) -> Handle | None:
        if type(sel) is str:
            found = self._name(sel, allocate=False)   # only the created list allocates
            if found is None and allocate:
                raise Undecided()   # an identity the created list does not name
            return found
        eid = sel["eid"]
        found = self.eids.get(eid)
        if found is None:
            found = self.cat.id_by_gid(uuid_to_gid(eid))
            if found is None:
                raise Undecided()   # neither known here nor created
            self.eids[eid] = found
        return found

    @overload
    def _attribute(self, name: str, allocate: Literal[True]) -> Handle: ...

    @overload
    def _attribute(self, name: str, allocate: bool) -> Handle | None: ...

    def _attribute(self, name: str, allocate: bool) -> Handle | None:
        a = self._name(name, allocate=False)
        if a is None:
            if allocate:
                raise Undecided()
            return None
        if isinstance(a, int) and a <= SYSTEM_MAX:
            raise Undecided()   # schema, shapes and receipts: the general planner's rules
        return a

    @overload
    def _value(self, raw: JSON, tag: str, allocate: Literal[True]) -> Value: ...

    @overload
    def _value(self, raw: JSON, tag: str, allocate: bool) -> Value | None: ...

    def _value(self, raw: JSON, tag: str, allocate: bool) -> Value | None:
        decoded = from_tagged(raw, tag)
        if isinstance(decoded, RefWire):
            target = self._entity(decoded.selector, allocate)
            return None if target is None else Value(TAG_REF, target, None)
        return decoded

    def _slot(self, e: Handle, a: Handle) -> Slot:
        key = (e, a)
        found = self.slots.get(key)
        if found is None:
            live = read_live(self.cat, e, a, self.fact_tx) if isinstance(e, int) and isinstance(a, int) else {}
            found = self.slots[key] = Slot.over(e, a, live)
        return found

    def _retract(self, e: JSON, a: str, raw: JSON, tag: str) -> None:
        target = self._entity(e, allocate=False)
        attr = self._attribute(a, allocate=False)
        value = self._value(raw, tag, allocate=False)
        if target is None or attr is None or value is None:
            return
        slot = self._slot(target, attr)
        key = (value.t, value.v)
        if key in slot.present:
            del slot.present[key]
            self.dirty[id(slot)] = slot
            if key in slot.live:
                slot.removed[key] = next(self.seq)

    def _assert(self, e: JSON, a: str, raw: JSON, tag: str) -> None:
        target = self._entity(e, allocate=True)
        if isinstance(target, int) and (target <= SYSTEM_MAX or (type(e) is not str and self.cat.name_of(target) is None
                                                                 and self.cat.is_transaction(target))):
            raise Undecided()   # not writable
        attr = self._attribute(a, allocate=True)
        value = self._value(raw, tag, allocate=True)
        schema = self.schema(attr)
        declared = schema["type"]
        if value.t == TAG_VECTOR and (declared is None or schema["dims"] is None
                                      or schema["dims"] != len(value.blob) // 4):  # type: ignore[arg-type]  # a vector's blob is its packed bytes
            raise Undecided()   # inferred type or dims, or a dimension the general planner refuses
        if declared is not None and value.t not in TYPE_TAGS.get(declared, ()):
            raise Undecided()
        slot = self._slot(target, attr)
        key = (value.t, value.v)
        if key in slot.present:
            return
        many = schema["many"]
        if not many:
            if any(k not in slot.live for k in slot.present):
                raise Undecided()   # two values for a cardinality-one attribute
            for k in [k for k in slot.present if k in slot.live]:
                del slot.present[k]
                slot.removed[k] = next(self.seq)
        slot.present[key] = (value, next(self.seq))
        self.dirty[id(slot)] = slot
        self.owners.setdefault((attr, key), []).append(target)

    def _finish(self) -> Delta:
        asserted: list[tuple[int, Handle, Handle, Value]]
        retracted: list[tuple[int, Handle, Handle, Value, int]]
        asserted, retracted = [], []
        for slot in self.dirty.values():
            fresh = [key for key in slot.present if key not in slot.live]
            if not fresh and all(key in slot.present for key in slot.live):
                continue     # unchanged
            self._check(slot, fresh)
            for key in fresh:
                value, seq = slot.present[key]
                asserted.append((seq, slot.e, slot.a, value))
            for key, seq in slot.removed.items():
                if key not in slot.present:
                    retracted.append((seq, slot.e, slot.a, Value(key[0], key[1], None), slot.live[key]))
        asserted.sort(key=lambda r: r[0])
        retracted.sort(key=lambda r: r[0])
        used: set[int] = set()
        for _, e, _, value in asserted:
            used.add(id(e))
            if value.t == TAG_REF:
                used.add(id(value.v))
        kept = [n for n in self.new if n.kind == "name" or id(n) in used]
        # only live facts are retracted, and their entities and attributes are stored ids
        return Delta([r[1:] for r in asserted], [r[1:] for r in retracted], kept)  # type: ignore[misc]

    def _check(self, slot: Slot, fresh: list[ValueKey]) -> None:
        """``Constraints.check_slot``'s rules; any doubt goes to the general planner."""
        schema = self.schema(slot.a)
        declared = schema["type"]
        if declared is not None:
            allowed = TYPE_TAGS.get(declared, ())
            if any(key[0] not in allowed for key in slot.present):
                raise Undecided()
        if not schema["many"] and len(slot.present) > 1:
            raise Undecided()
        if schema["unique"]:
            for key in fresh:
                if len(self.owners.get((slot.a, key), ())) > 1:
                    raise Undecided()
                if isinstance(slot.a, int) and not isinstance(key[1], NewIdent):
                    for owner in self.cat.live_owners(slot.a, key[1], key[0]):
                        held = self.slots.get((owner, slot.a))
                        if held is None or key in held.present:
                            raise Undecided()   # another entity holds it (or this one, unexpectedly)


NEW_ATTRIBUTE: dict[str, Any] = {"type": None, "many": False, "unique": False, "nohistory": None, "dims": None}
