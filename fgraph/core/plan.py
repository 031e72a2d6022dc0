"""Planning: expand a request into the delta it commits (spec 03 §2–§7).

The planner keeps a working set per (entity, attribute) over the live state,
loaded lazily through indexed lookups. New identities are placeholders until the
plan is final; unused anonymous ones are dropped and the ids compacted.

The planner is split on its seams: selectors, identities and slots in selectors.py, the operations in
operations.py (both base classes of ``Planner``), the final-state checks in constraints.py (a
part, by composition), names in names.py and the schema cache in schema_cache.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Literal, overload

from fgraph.core import values
from fgraph.core.catalog import Catalog
from fgraph.core.constraints import Constraints
from fgraph.core.values import TYPE_TAGS
from fgraph.core.errors import Conflict, Unsupported, ValueTypeError
from fgraph.core.genesis import (A_DIMS, A_MANY, A_NOHISTORY, A_SHAPE, A_TYPE, A_UNIQUE, A_VECTOR_MODEL)
from fgraph.core.values import RefWire, Value
from fgraph.core.names import ATTRIBUTE_RE
from fgraph.core.schema_cache import SchemaCache
from fgraph.core.operations import Operations
# NewIdent and Slot are part of the planner's interface (imported from here), hence the redundant aliases
from fgraph.core.selectors import Handle, Identities, NewIdent as NewIdent, Policy, Slot as Slot, ValueKey
from fgraph.core.types import JSON

OPERATIONS = ("assert", "retract", "cas")
SCHEMA_ATTRS = frozenset({A_TYPE, A_MANY, A_UNIQUE, A_NOHISTORY, A_DIMS, A_VECTOR_MODEL})


def nohistory_of(schema: dict[str, Any]) -> bool:
    """Whether retracting a value of an attribute with this schema deletes it (vectors by default)."""
    return schema["nohistory"] == 1 or (schema["nohistory"] is None and schema["type"] == "vector")


class WritePolicy:
    """How a plan may make identities: a direct write may allocate freely and may not refer to
    transactions as plain refs; a replay changes both (``core.replay.ReplayPolicy``)."""

    replaying = False
    allocation_closed = False


DIRECT_WRITE = WritePolicy()


def read_live(cat: Catalog, e: int, a: int, fact_tx: dict[int, int]) -> dict[ValueKey, int]:
    """key -> fact id of the live facts of (e, a); each fact's asserting tx goes into ``fact_tx``."""
    live: dict[ValueKey, int] = {}
    for fact_id, v, t, tx in cat.live_values(e, a):
        live[(t, v)] = fact_id
        fact_tx[fact_id] = tx
    return live


class Planner(Identities, Operations):
    """Expands one request, item by item, into the delta it commits (spec 03 §5).

    ``policy`` is how identities may be made: a direct write's (the default) or a replay's
    (``core.replay.ReplayPolicy``: refs to transactions resolve normally, and once the record's
    created identities are allocated every further one is refused)."""

    def __init__(self, catalog: Catalog, schema_cache: SchemaCache | None = None, policy: Policy | None = None) -> None:
        self.cat = catalog
        self.policy: Policy = policy if policy is not None else DIRECT_WRITE
        self.constraints = Constraints(self)
        self.schema_cache = schema_cache if schema_cache is not None else SchemaCache()
        self.slots: dict[tuple[Handle, Handle], Slot] = {}
        self.new: list[NewIdent] = []
        self.names: dict[str, NewIdent] = {}
        self.resolved: dict[str, Handle] = {}   # name -> stored id or NewIdent, as resolved in this plan
        self.tmps: dict[str, NewIdent] = {}
        self.eid_overrides: dict[str, Handle] = {}   # apply: source eids -> local handles
        self.owners: dict[tuple[Handle, ValueKey], list[Handle]] = {}     # (a, key) -> entities that gained that value
        self.seq = itertools.count()
        self.tx = NewIdent("tx", None)
        self.cas_slots: set[tuple[Handle, Handle]] = set()
        # a cas whose expectation failed: raised once every item is planned, so an error of a later
        # item (a value of the wrong type, a pinned unique value) is the one reported, as the
        # published runtime reports it
        self.cas_mismatch: Conflict | None = None
        self.item = 0
        self.dirty: dict[int, Slot] = {}        # slots whose working values changed
        self.fact_tx: dict[int, int] = {}       # live fact id -> asserting tx, as loaded
        self._schemas: dict[Handle, dict[str, Any]] = {}  # attribute handle -> schema, until a schema fact moves
        self._schema_moved: set[Handle] = set()          # attributes whose schema facts this plan touched
        self.touched: set[Handle] = set()               # entities that are the subject of some item of the request
        self.double_assertions: list[Slot] = []       # slots that got a second pending value (judged in finish)
        self._stored_dims: dict[int, int | None] = {}            # attribute -> dimension of its stored vectors, see stored_dims
        self.entity_retractions: dict[tuple[int, ValueKey], Handle | None] = {}      # (id(slot), key) -> holder (None: own fact) of ["retract", e]

    # -- schema -----------------------------------------------------------------
    def slot(self, e: Handle, a: Handle) -> Slot:
        key = (e, a)
        found = self.slots.get(key)
        if found is None:
            live: dict[ValueKey, int] = {}
            if isinstance(e, int) and isinstance(a, int):
                # key is (e, a), both ints here: mypy does not narrow a tuple built before the check
                cached = self.schema_cache.rows.get(key) if a in SCHEMA_ATTRS else None  # type: ignore[arg-type]
                if cached is not None:
                    live = dict(cached)
                else:
                    live = read_live(self.cat, e, a, self.fact_tx)
                    if a in SCHEMA_ATTRS:
                        self.schema_cache.rows[key] = dict(live)  # type: ignore[index]  # as above
            found = self.slots[key] = Slot.over(e, a, live)
        return found

    def present_value(self, e: Handle, a: Handle) -> Any:
        """The value (e, a) holds as planned so far, one of them for a many attribute; None when it has none."""
        present = self.slot(e, a).present
        return next(iter(present.values()))[0].v if present else None

    def schema(self, a: Handle) -> dict[str, Any]:
        """The attribute's schema summary; shared across transactions while its schema facts stand."""
        found = self._schemas.get(a)
        if found is None:
            shared = isinstance(a, int) and a not in self._schema_moved
            # shared implies an int a: mypy does not narrow through the flag
            found = self.schema_cache.schemas.get(a) if shared else None  # type: ignore[arg-type]
            if found is None:
                found = {"type": self.present_value(a, A_TYPE), "many": self.present_value(a, A_MANY) == 1,
                         "unique": self.present_value(a, A_UNIQUE) == 1,
                         "nohistory": self.present_value(a, A_NOHISTORY), "dims": self.present_value(a, A_DIMS)}
                if shared:
                    self.schema_cache.schemas[a] = found  # type: ignore[index]  # as above
            self._schemas[a] = found
        return found

    def _touched(self, slot: Slot) -> None:
        self.dirty[id(slot)] = slot
        if slot.a in SCHEMA_ATTRS:
            self._schemas.pop(slot.e, None)
            self._schema_moved.add(slot.e)

    def nohistory(self, a: Handle) -> bool:
        return nohistory_of(self.schema(a))

    # -- values -----------------------------------------------------------------
    @overload
    def plain_value(self, raw: JSON, *, allocate: Literal[True], allow_missing: Literal[False] = False) -> Value: ...
    @overload
    def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: Literal[False] = False) -> Value | None: ...
    @overload   # a Value, values.MISSING or None (an identity check that mypy cannot narrow by)
    def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: bool) -> Any: ...

    def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: bool = False) -> Any:
        """A Value (refs resolved to handles); None for an unknown ref when not allocating."""
        wire = values.from_wire(raw, allow_missing=allow_missing)
        if isinstance(wire, RefWire):
            target = self.entity(wire.selector, allocate=allocate)
            if target is None:
                return None
            if not self.policy.replaying and isinstance(target, int) and isinstance(wire.selector, dict) \
                    and "eid" in wire.selector and self.cat.is_transaction(target):
                raise Unsupported("a transaction's eid cannot be a ref value in a direct write",
                                  "refer to a domain entity instead")
            return Value(0, target, None)
        return wire

    def attribute_label(self, a: Handle) -> str:
        # an attribute's placeholder is a name's, so it has its key
        return a.key if isinstance(a, NewIdent) else (self.cat.name_of(a) or str(a))  # type: ignore[return-value]

    def check_type_now(self, e: Handle, a: Handle, value: Value, infer: bool = True) -> None:
        s = self.schema(a)
        declared = s["type"]
        if declared is None and value.t == values.TAG_VECTOR and infer:
            self.assert_fact(a, A_TYPE, Value(values.TAG_TEXT, "vector", None))
            declared = "vector"
        if declared is not None and value.t not in TYPE_TAGS.get(declared, ()):
            shown = value.v if value.t != 0 else "a ref"
            raise ValueTypeError(
                f"attribute {self.attribute_label(a)!r} requires {declared}, but {shown!r} is "
                f"{values.logical_name(value.t)}", "write a value of that type or change its declaration")
        if value.t == values.TAG_VECTOR and infer:
            length = len(value.blob) // 4  # type: ignore[arg-type]  # a vector's blob is its packed bytes
            stored = self.stored_dims(a) if s["dims"] is None else None
            if s["dims"] is None and stored is None:
                self.assert_fact(a, A_DIMS, Value(values.TAG_INT, length, None))
            elif s["dims"] is None and stored != length:
                # Without declared dims, vectors already stored fix the dimension (published behaviour).
                raise ValueTypeError(
                    f"attribute {self.attribute_label(a)!r} requires vectors with {stored} dimensions, got {length}",
                    "write a vector of that dimension, or declare the intended dims")
            elif s["dims"] is not None and s["dims"] != length:
                raise ValueTypeError(
                    f"attribute {self.attribute_label(a)!r} holds {s['dims']}-dimensional vectors, not {length}",
                    "pass a vector of the declared dimension")

    def stored_dims(self, a: Handle) -> int | None:
        """The dimension of the first vector stored for ``a`` (live or not), None if there is none."""
        if not isinstance(a, int):
            return None
        if a not in self._stored_dims:
            row = self.cat.settled().execute(
                "SELECT length(b.data) FROM fgraph_facts AS f JOIN fgraph_blobs AS b ON b.hash = f.v "
                "WHERE f.a = ? AND f.t = ? ORDER BY f.id LIMIT 1", (a, values.TAG_VECTOR)).fetchone()
            self._stored_dims[a] = None if row is None else row[0] // 4
        return self._stored_dims[a]

    # -- working set ------------------------------------------------------------
    def assert_fact(self, e: Handle, a: Handle, value: Value) -> None:
        slot = self.slot(e, a)
        slot.items.add(self.item)
        key = (value.t, value.v)
        if key in slot.present:
            return
        if any(k not in slot.live for k in slot.present):
            # Two values asserted for one (e, a) are a Conflict only if the attribute is still
            # cardinality-one when the request ends, and only after every item planned (finish).
            self.double_assertions.append(slot)
        if not self.schema(a)["many"]:
            for k in [k for k in slot.present if k in slot.live]:
                self.remove(slot, k)
        slot.present[key] = (value, next(self.seq))
        self._touched(slot)
        self.owners.setdefault((a, key), []).append(e)

    def remove(self, slot: Slot, key: ValueKey, seq: int | None = None) -> None:
        slot.items.add(self.item)
        if key in slot.present:
            del slot.present[key]
            self._touched(slot)
            if key in slot.live:
                slot.removed[key] = next(self.seq) if seq is None else seq

    def basis_owner(self, a: Handle, key: ValueKey) -> int | None:
        """The entity that held the unique value when the transaction began."""
        if isinstance(a, int) and not isinstance(key[1], NewIdent):
            for e in self.cat.live_owners(a, key[1], key[0]):
                return e
        return None

    def unique_owner(self, a: Handle, key: ValueKey) -> Handle | None:
        """Who holds a unique value for upserts and pinned maps (published behaviour): the
        basis owner even if this request retracted the value, else the first entity the
        request gave it to, even if the request retracted it again."""
        owner = self.basis_owner(a, key)
        if owner is not None:
            return owner
        found = self.owners.get((a, key))
        return found[0] if found else None

    def unique_owners(self, m: dict[str, JSON]) -> Iterator[tuple[str, JSON, Handle | None]]:
        """(key, raw value, owner) for every unique value of a map, in key order (owner may be None)."""
        for key in sorted(k for k in m if k != "id"):
            if not isinstance(key, str) or not ATTRIBUTE_RE.match(key):
                continue
            a = self.named(key, allocate=False)
            if a is None or not self.schema(a)["unique"]:
                continue
            for raw in (m[key] if isinstance(m[key], list) else [m[key]]):
                if values.is_entity_map(raw):
                    continue
                value = self.plain_value(raw, allocate=False)
                yield key, raw, None if value is None else self.unique_owner(a, (value.t, value.v))

    def check_pinned(self, entity: Handle, m: dict[str, JSON]) -> None:
        """A map whose id pins an entity while one of its unique values belongs to another
        entity is a Conflict, raised before the map's values are planned."""
        for key, raw, owner in self.unique_owners(m):
            if owner is not None and owner is not entity and owner != entity:
                raise Conflict(f"map id {m['id']!r} pins another entity than the owner of its unique "
                               f"{key} value {raw!r}", "omit the id to upsert onto the owner, or change the value")

    # -- request items ----------------------------------------------------------
    def plan_data(self, data: JSON) -> None:
        if isinstance(data, list) and data and isinstance(data[0], str) and data[0] in OPERATIONS:
            self.plan_item(data)
            return
        if data == [] or data == {}:
            return
        items = data if isinstance(data, list) else [data]
        for item in items:
            self.item += 1
            self.plan_item(item)

    def plan_item(self, item: JSON) -> None:
        if isinstance(item, dict):
            self.plan_map(item)
        elif isinstance(item, list) and item and isinstance(item[0], str) and item[0] in OPERATIONS:
            getattr(self, "op_" + item[0])(item)
        else:
            shown = item[0] if isinstance(item, list) and item else item
            raise ValueTypeError(f"transaction item {shown!r} is neither a map nor an operation",
                                 'use {"id": ..., "ns/attr": value} or ["assert"|"retract"|"cas", ...]')

    def plan_map(self, m: dict[str, JSON], entity: Handle | None = None) -> Handle:
        if entity is None:
            if "id" in m:
                entity = self.entity(m["id"], allocate=True, map_id=True)
                self.writable(entity)
                self.check_pinned(entity, m)
            else:
                entity = self.upsert_target(m) or self._allocate("anon", None)
        self.touched.add(entity)
        for key in sorted(k for k in m if k != "id"):
            a = self.attribute(key, allocate=True)
            raw = m[key]
            if isinstance(raw, list):
                if not self.schema(a)["many"]:
                    raise Conflict(f"attribute {key!r} is cardinality-one but got an array",
                                   f"pass one value, or declare it with `fgraph declare {key} --many`")
                for element in raw:
                    self.assert_value(entity, a, element)
            else:
                self.assert_value(entity, a, raw)
        return entity

    def upsert_target(self, m: dict[str, JSON]) -> Handle | None:
        """The entity a map without id upserts onto: the owner of its first unique value that has one."""
        for _, _, owner in self.unique_owners(m):
            if owner is not None:
                return owner
        return None

    def assert_value(self, e: Handle, a: Handle, raw: JSON) -> None:
        if values.is_entity_map(raw):
            if self.schema(a)["type"] != "ref":
                raise ValueTypeError(
                    f"nested map on {self.attribute_label(a)!r} requires type='ref'",
                    "declare it with --ref, or wrap domain JSON as {\"json\": ...}")
            value = Value(0, self.plan_map(raw), None)
        else:
            value = self.plain_value(raw, allocate=True)
        self.check_type_now(e, a, value)
        self.assert_fact(e, a, value)

    def plan_tx_facts(self, tx_map: dict[str, JSON]) -> None:
        self.item += 1
        self.plan_map(tx_map, entity=self.tx)

    # -- final state ------------------------------------------------------------
    def finish(self) -> "Delta":
        """Check the final state, drop unused placeholders, and return the delta."""
        if self.cas_mismatch is not None:
            raise self.cas_mismatch
        for key in self.cas_slots:
            if len(self.slots[key].items) > 1:
                raise Conflict(f"cas on {self.attribute_label(key[1])!r} shares its entity and attribute with "
                               "another item", "use one cas per (entity, attribute) and nothing else on it")
        for slot in self.double_assertions:
            if not self.schema(slot.a)["many"]:
                raise Conflict(f"two values for cardinality-one attribute {self.attribute_label(slot.a)!r} "
                               "in one transaction", "keep one value, or declare the attribute --many")
        self.replace_on_cardinality_one()
        changed = [slot for slot in self.dirty.values() if self.slot_changed(slot)]
        changed_schema = {id(slot.e): slot.e for slot in changed if slot.a in SCHEMA_ATTRS}
        self.schema_changed = bool(changed_schema) or any(slot.a == A_SHAPE for slot in changed)
        for a in changed_schema.values():
            self.constraints.check_declaration(a)
        for slot in changed:
            self.constraints.check_slot(slot)
        self.constraints.check_shapes()
        asserted, retracted = [], []
        for slot in changed:
            for key, (value, seq) in slot.present.items():
                if key not in slot.live:
                    asserted.append((seq, slot.e, slot.a, value))
            for key, seq in slot.removed.items():
                if key not in slot.present:
                    retracted.append((self.retraction_order(slot, key, seq), slot.e, slot.a,
                                      Value(key[0], key[1], None), slot.live[key]))
        asserted.sort(key=lambda r: r[0])
        retracted.sort(key=lambda r: r[0])
        used = set()
        for _, e, _, value in asserted:
            used.add(id(e))
            if value.t == 0:
                used.add(id(value.v))
        kept = [n for n in self.new if n.kind == "name" or id(n) in used]
        # only live facts are retracted, and their entities and attributes are stored ids
        return Delta([r[1:] for r in asserted], [r[1:] for r in retracted], kept)  # type: ignore[misc]

    def replace_on_cardinality_one(self) -> None:
        """A value asserted while the attribute was many, which ends the request as
        cardinality-one, replaces the entity's other live values (published behaviour);
        they are retracted at the assertion's position."""
        for slot in list(self.dirty.values()):
            if len(slot.present) < 2 or self.schema(slot.a)["many"]:
                continue
            pending = [k for k in slot.present if k not in slot.live]
            if len(pending) == 1:
                seq = slot.present[pending[0]][1]
                for key in [k for k in slot.present if k in slot.live]:
                    self.remove(slot, key, seq=seq)

    @staticmethod
    def slot_changed(slot: Slot) -> bool:
        """Whether the plan asserts or retracts anything in ``slot``."""
        return any(k not in slot.live for k in slot.present) or any(k not in slot.present for k in slot.live)


class Delta:
    """What a plan commits: assertions and retractions in planning order, kept identities."""

    __slots__ = ("asserted", "retracted", "new")

    def __init__(self, asserted: list[tuple[Handle, Handle, Value]],
                 retracted: list[tuple[int, int, Value, int]], new: list[NewIdent]) -> None:
        self.asserted = asserted      # (e, a, Value) with handles
        self.retracted = retracted    # (e, a, Value, fact id): live facts, so stored e and a
        self.new = new                # NewIdent in allocation order (the tx excluded)
