"""Final-state constraints of a plan (spec 03 §5): declarations, types, cardinality,
uniqueness and shapes, checked after every item is planned so order cannot matter.

A part of ``Planner`` (``planner.constraints``), by composition: it reads the plan's working
slots and schema and changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fgraph.core import values
from fgraph.core.errors import Conflict, SchemaError
from fgraph.core.genesis import A_SHAPE, A_SHAPE_ALLOWED, A_SHAPE_CLOSED, A_SHAPE_REQUIRED, A_VECTOR_MODEL, SYSTEM_MAX
from fgraph.core.values import TAG_REF, TYPE_TAGS

if TYPE_CHECKING:
    from fgraph.core.catalog import Catalog
    from fgraph.core.schema_cache import SchemaCache
    from fgraph.core.selectors import Handle, Slot, ValueKey


class PlanView(Protocol):
    """What the checks read of the plan they belong to (``core.plan.Planner``); a protocol, so
    that this part does not import its whole."""

    cat: Catalog
    schema_cache: SchemaCache
    slots: dict[tuple[Handle, Handle], Slot]
    owners: dict[tuple[Handle, ValueKey], list[Handle]]
    dirty: dict[int, Slot]

    def slot(self, e: Handle, a: Handle) -> Slot: ...
    def present_value(self, e: Handle, a: Handle) -> Any: ...
    def schema(self, a: Handle) -> dict[str, Any]: ...
    def attribute_label(self, a: Handle) -> str: ...
    @staticmethod
    def slot_changed(slot: Slot) -> bool: ...


class Constraints:
    """The final-state checks of one plan; they read its working slots and schema."""

    def __init__(self, plan: PlanView) -> None:
        self.plan = plan

    def check_declaration(self, a: Handle) -> None:
        label = self.plan.attribute_label(a)
        s = self.plan.schema(a)
        kind = s["type"]
        if kind is not None and kind not in TYPE_TAGS:
            raise SchemaError(f"unknown type {kind!r} for {label!r}",
                              "use one of bool, int, float, text, instant, bytes, vector, json, ref")
        if s["unique"] and (kind is None or kind in ("json", "vector")):
            raise SchemaError(f"{label!r} cannot be unique with type {kind!r}",
                              "declare a scalar type (not json or vector) together with --unique")
        dims = s["dims"]
        if dims is not None and (kind != "vector" or isinstance(dims, bool) or dims <= 0):
            raise SchemaError(f"invalid dims {dims!r} for {label!r}",
                              "dims must be a positive integer on a vector attribute")
        if self.plan.present_value(a, A_VECTOR_MODEL) is not None and kind != "vector":
            raise SchemaError(f"vector-model on {label!r} requires type vector", "declare --type vector")
        if isinstance(a, int):
            self.check_existing_values(a, label, s)

    def check_existing_values(self, a: int, label: str, s: dict[str, Any]) -> None:
        conn = self.plan.cat.settled()
        if s["type"] is not None:
            tags = ",".join(str(t) for t in TYPE_TAGS[s["type"]])
            for (e,) in conn.execute(
                    f"SELECT DISTINCT e FROM fgraph_facts WHERE a = ? AND rx IS NULL AND t NOT IN ({tags})", (a,)):
                if any(k[0] not in TYPE_TAGS[s["type"]] for k in self.plan.slot(e, a).present):
                    raise SchemaError(f"{label!r} already holds values that are not {s['type']}",
                                      "retract them first, or declare another type")
        if s["type"] == "vector" and s["dims"] is not None:
            for e, v, size in conn.execute(
                    "SELECT f.e, f.v, length(b.data) FROM fgraph_facts AS f JOIN fgraph_blobs AS b ON b.hash = f.v "
                    "WHERE f.a = ? AND f.rx IS NULL AND f.t = ? AND length(b.data) != ?",
                    (a, values.TAG_VECTOR, 4 * s["dims"])):
                if (values.TAG_VECTOR, v) in self.plan.slot(e, a).present:
                    raise SchemaError(f"attribute {label!r} already contains {size // 4}-dimensional vectors; "
                                      f"cannot declare dims={s['dims']}", "retract those vectors first")
        if not s["many"]:
            for (e,) in conn.execute(
                    "SELECT e FROM fgraph_facts WHERE a = ? AND rx IS NULL GROUP BY e HAVING count(*) > 1", (a,)):
                self.check_slot(self.plan.slot(e, a))
        if s["unique"]:
            for v, t in conn.execute("SELECT v, t FROM fgraph_facts WHERE a = ? AND rx IS NULL "
                                     "GROUP BY v, t HAVING count(*) > 1", (a,)):
                owners = [e for e in self.plan.cat.live_owners(a, v, t) if (t, v) in self.plan.slot(e, a).present]
                if len(owners) > 1:
                    raise SchemaError(f"{label!r} cannot become unique: value {v!r} has several owners",
                                   "make the values distinct first")

    def check_slot(self, slot: Slot) -> None:
        a = slot.a
        s = self.plan.schema(a)
        if s["type"] is not None:
            for key in slot.present:
                if key[0] not in TYPE_TAGS.get(s["type"], ()):
                    raise SchemaError(f"{self.plan.attribute_label(a)!r} is declared {s['type']} but holds a "
                                      f"{values.logical_name(key[0])} value", "make the value and type agree")
        if not s["many"] and len(slot.present) > 1:
            if any(k not in slot.live for k in slot.present):
                raise Conflict(f"{self.plan.attribute_label(a)!r} is cardinality-one but would hold "
                               f"{len(slot.present)} values",
                               "keep one value, or declare it --many")
            raise SchemaError(f"{self.plan.attribute_label(a)!r} cannot become cardinality-one while an entity holds "
                              "several values",
                              "retract the extra values first")
        if s["unique"]:
            for key in slot.present:
                if key in slot.live:
                    continue
                owners = {id(e) for e in self.plan.owners.get((a, key), ()) if key in self.plan.slot(e, a).present}
                if isinstance(a, int) and isinstance(key[1], (int, float, str, bytes)):  # not a new identity
                    owners |= {id(e) for e in self.plan.cat.live_owners(a, key[1], key[0])
                               if key in self.plan.slot(e, a).present}
                if len(owners) > 1:
                    raise Conflict(f"unique value {key[1]!r} of {self.plan.attribute_label(a)!r} already belongs to "
                                   "another entity",
                                   "upsert onto the owner (omit id), or retract it from the owner first")

    def check_shapes(self) -> None:
        """Shapes: required attributes present; closed shapes allow only listed attributes."""
        if self.plan.schema_cache.has_shapes is None:
            self.plan.schema_cache.has_shapes = self.plan.cat.has_live_attribute(A_SHAPE)
        if not self.plan.schema_cache.has_shapes and not any(
                slot.a == A_SHAPE and slot.present for slot in self.plan.dirty.values()):
            return
        touched = {id(slot.e): slot.e for slot in self.plan.dirty.values() if self.plan.slot_changed(slot)}
        # A changed shape checks every entity assigned to it, not only the ones this request touches.
        reshaped = {id(slot.e): slot.e for slot in self.plan.dirty.values()
                    if slot.a in (A_SHAPE_REQUIRED, A_SHAPE_ALLOWED, A_SHAPE_CLOSED) and self.plan.slot_changed(slot)}
        e: Handle
        for shape in reshaped.values():
            if isinstance(shape, int):
                for e in self.plan.cat.live_owners(A_SHAPE, shape, TAG_REF):
                    touched.setdefault(id(e), e)
        for e in touched.values():
            for key in self.plan.slot(e, A_SHAPE).present:
                self.check_shape(e, key[1])

    def check_shape(self, e: Handle, shape: Handle) -> None:
        required = [key[1] for key in self.plan.slot(shape, A_SHAPE_REQUIRED).present]
        allowed = required + [key[1] for key in self.plan.slot(shape, A_SHAPE_ALLOWED).present]
        closed = self.plan.present_value(shape, A_SHAPE_CLOSED) == 1
        held = [slot.a for slot in self.plan.slots.values() if slot.e is e or slot.e == e and slot.present]
        if isinstance(e, int):
            held += [a for a in self.plan.cat.live_attributes(e) if self.plan.slot(e, a).present]
        held = [a for a in held if self.plan.slot(e, a).present]
        for a in required:
            if not any(h is a or h == a for h in held):
                raise SchemaError(f"entity is missing attribute {self.plan.attribute_label(a)!r} required by its shape",
                                  "add the attribute in the same transaction")
        if closed:
            for a in held:
                if not (isinstance(a, int) and a <= SYSTEM_MAX) and not any(x is a or x == a for x in allowed):
                    raise SchemaError(f"attribute {self.plan.attribute_label(a)!r} is not allowed by the closed shape",
                                      "remove it or allow it in the shape")
