"""The three operations of a request (spec 03 §4): ``assert``, ``retract`` (a value, an
attribute or a whole entity) and ``cas``, planned onto the working set.

A part of ``Planner`` (its base class): one seam of the planner, kept here so plan.py holds the
working set, the maps and the final state.
"""

from __future__ import annotations

from itertools import count
from typing import TYPE_CHECKING, Any, Literal, overload

from fgraph.core import values
from fgraph.core.errors import Conflict, NotFound, SchemaError, ValueTypeError
from fgraph.core.genesis import (SYSTEM_MAX)
from fgraph.core.names import ATTRIBUTE_RE
from fgraph.core.selectors import Handle, NewIdent, Slot, ValueKey
from fgraph.core.types import JSON

if TYPE_CHECKING:
    from fgraph.core.catalog import Catalog
    from fgraph.core.values import Value


class Operations:
    """``["assert" | "retract" | "cas", …]`` items, for ``Planner``."""

    if TYPE_CHECKING:  # what Planner, the class this one is a part of, provides
        cat: Catalog
        names: dict[str, NewIdent]
        touched: set[Handle]
        item: int
        seq: count[int]
        slots: dict[tuple[Handle, Handle], Slot]
        tx: NewIdent
        cas_slots: set[tuple[Handle, Handle]]
        cas_mismatch: Conflict | None
        entity_retractions: dict[tuple[int, ValueKey], Handle | None]

        @overload
        def entity(self, sel: JSON, *, allocate: Literal[True], map_id: bool = False) -> Handle: ...
        @overload
        def entity(self, sel: JSON, *, allocate: bool, map_id: bool = False) -> Handle | None: ...
        def entity(self, sel: JSON, *, allocate: bool, map_id: bool = False) -> Handle | None: ...

        @overload
        def attribute(self, name: JSON, *, allocate: Literal[True]) -> Handle: ...
        @overload
        def attribute(self, name: JSON, *, allocate: bool) -> Handle | None: ...
        def attribute(self, name: JSON, *, allocate: bool) -> Handle | None: ...

        @overload
        def plain_value(self, raw: JSON, *, allocate: Literal[True], allow_missing: Literal[False] = False) -> Value: ...
        @overload
        def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: Literal[False] = False) -> Value | None: ...
        @overload
        def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: bool) -> Any: ...
        def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: bool = False) -> Any: ...

        def writable(self, e: Handle) -> None: ...
        def slot(self, e: Handle, a: Handle) -> Slot: ...
        def schema(self, a: Handle) -> dict[str, Any]: ...
        def assert_value(self, e: Handle, a: Handle, raw: JSON) -> None: ...
        def assert_fact(self, e: Handle, a: Handle, value: Value) -> None: ...
        def check_type_now(self, e: Handle, a: Handle, value: Value, infer: bool = True) -> None: ...
        def remove(self, slot: Slot, key: ValueKey, seq: int | None = None) -> None: ...

    def op_assert(self, op: list[JSON]) -> None:
        if len(op) != 4:
            raise ValueTypeError(f"assert takes [\"assert\", e, a, v], got {len(op)} elements", "fix the arity")
        e = self.entity(op[1], allocate=True)
        self.writable(e)
        self.touched.add(e)
        a = self.attribute(op[2], allocate=True)
        if isinstance(op[3], list):
            raise ValueTypeError("an assert operation takes one value, not an array", "assert each value")
        self.assert_value(e, a, op[3])

    def quiet(self, sel: JSON, attribute: bool = False) -> Handle | None:
        """Resolve for a retraction: unknown or unusable names are simply not there."""
        if isinstance(sel, str):
            if sel in self.names:
                return self.names[sel]
            if attribute and not ATTRIBUTE_RE.match(sel):
                return None
            return self.cat.id_by_name(sel)
        if attribute:
            raise ValueTypeError(f"attribute {sel!r} is not a name", "name the attribute to retract")
        return self.entity(sel, allocate=False)

    def op_retract(self, op: list[JSON]) -> None:
        if not 2 <= len(op) <= 4:
            raise ValueTypeError(f"retract takes 2 to 4 elements, got {len(op)}", 'use ["retract", e, a?, v?]')
        ref = op[3].get("ref") if len(op) == 4 and isinstance(op[3], dict) and len(op[3]) == 1 else None
        if isinstance(ref, dict) and "tmp" in ref:
            raise ValueTypeError("a tmp id cannot be a retracted ref value",
                                 "retract the ref by name, id, lookup or eid")
        e = self.quiet(op[1])
        if e is None:
            return  # retracting through an unknown name changes nothing
        self.writable(e)
        # None only for a two-element retract, which does not use it
        a: Handle = self.quiet(op[2], attribute=True) if len(op) >= 3 else None  # type: ignore[assignment]
        if len(op) >= 3 and a is None:
            return  # nor through an unknown attribute
        self.touched.add(e)
        if len(op) == 2:
            self.retract_entity(e)
            return
        if len(op) == 3:
            slot = self.slot(e, a)
            for key in list(slot.present):
                self.remove(slot, key)
            slot.items.add(self.item)
            return
        if values.is_entity_map(op[3]) or isinstance(op[3], list):
            raise ValueTypeError("retract takes one plain value", "pass the value to retract")
        value = self.plain_value(op[3], allocate=False)
        # A ref value names a stored identity, never one this request is creating (published behaviour).
        if value is None or (value.t == values.TAG_REF and isinstance(value.v, NewIdent)):
            raise NotFound(f"ref target {op[3]['ref']!r} was not found", "retract a value that exists")
        self.check_type_now(e, a, value, infer=False)
        self.remove(self.slot(e, a), (value.t, value.v))

    def retract_entity(self, e: Handle) -> None:
        """Every live fact of ``e`` and every live ref to it held by a domain entity."""
        keys: list[ValueKey]
        holder: Handle | None
        if isinstance(e, int):
            for a in self.cat.live_attributes(e):
                self.slot(e, a)
            for _, holder, a in self.cat.live_refs_to(e):
                if holder > SYSTEM_MAX and not self.cat.is_transaction(holder):
                    self.slot(holder, a)
        # All removals of this operation share one position in `retracted`; finish() orders
        # them inside it (see retraction_order).
        group = next(self.seq)
        for (se, _), slot in list(self.slots.items()):
            if se == e:
                keys, holder = list(slot.present), None
            elif se is not self.tx and (0, e) in slot.present:
                if isinstance(se, int) and (se <= SYSTEM_MAX or self.cat.is_transaction(se)):
                    continue
                keys, holder = [(0, e)], se
            else:
                continue
            for key in keys:
                self.remove(slot, key, seq=group)
                self.entity_retractions[(id(slot), key)] = holder

    def retraction_order(self, slot: Slot, key: ValueKey, seq: int) -> tuple[int, int, int]:
        """Sort key of a retracted fact (published behaviour, docs/format.md §retracted order).

        Facts follow the operations that removed them. The facts one ["retract", e] removes
        come in fact-id order — e's own facts together with the refs held by entities that
        some item of the request writes about (before or after the operation) — and then
        the refs held by entities the request does not otherwise touch, in fact-id order.
        """
        marker = self.entity_retractions.get((id(slot), key), slot)
        if marker is slot:
            return (seq, 0, 0)
        untouched = marker is not None and marker not in self.touched
        return (seq, 1 if untouched else 0, slot.live[key])

    def op_cas(self, op: list[JSON]) -> None:
        if len(op) != 5:
            raise ValueTypeError(f"cas takes [\"cas\", e, a, expected, desired], got {len(op)} elements",
                                 "fix the arity")
        e = self.entity(op[1], allocate=False)
        if e is None or isinstance(e, NewIdent):
            raise NotFound(f"cas entity {op[1]!r} was not found", "cas needs an existing entity")
        self.writable(e)
        a = self.attribute(op[2], allocate=False)
        if a is None or isinstance(a, NewIdent):
            raise NotFound(f"cas attribute {op[2]!r} was not found", "cas needs an existing attribute")
        if self.schema(a)["many"]:
            raise SchemaError(f"cas needs a cardinality-one attribute; {op[2]!r} is many",
                              "use assert/retract for cardinality-many attributes")
        slot = self.slot(e, a)
        if slot.items - {self.item}:
            raise Conflict(f"cas on {op[2]!r} shares its entity and attribute with another item",
                           "use one cas per (entity, attribute) and nothing else on it")
        self.cas_slots.add((e, a))
        self.touched.add(e)
        expected = self.plain_value(op[3], allocate=False, allow_missing=True)
        if expected is None:  # an expected ref to nothing: NotFound, as the published runtime says
            raise NotFound(f"entity {op[3]['ref']!r} was not found", "transact it first or use a known name/id")
        if expected is not values.MISSING:
            self.check_type_now(e, a, expected, infer=False)
        desired = self.plain_value(op[4], allocate=True, allow_missing=True)
        current = [k for k in slot.present]
        want = [] if expected is values.MISSING else [(expected.t, expected.v)]
        if current != want and self.cas_mismatch is None:
            # planned on as if it held: the conflict is raised by finish(), after the other items
            self.cas_mismatch = Conflict(f"cas on {op[2]!r} expected {op[3]!r} but the live value differs",
                                         "read the current value and retry with it")
        slot.items.add(self.item)
        if expected is not values.MISSING and desired is not values.MISSING and \
                (expected.t, expected.v) == (desired.t, desired.v):
            return
        if desired is values.MISSING:
            for key in current:
                self.remove(slot, key)
        else:
            self.check_type_now(e, a, desired)
            self.assert_fact(e, a, desired)

