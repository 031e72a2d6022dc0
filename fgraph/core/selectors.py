"""Identities and selectors of one plan (spec 03 §3): names, ids, eids, lookups and tmp ids
resolved against the basis, and the placeholders of the identities the plan allocates.

A part of ``Planner`` (its base class): the selector rules are one seam of the planner, kept here
so plan.py holds the working set and the request items. ``Slot``, the working values of one
(entity, attribute), is here too: both bases of the planner work on slots, and plan.py imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, overload

from fgraph.core import values
from fgraph.core.values import TYPE_TAGS
from fgraph.core.errors import NotFound, SchemaError, Unsupported, ValueTypeError
from fgraph.core.genesis import (A_TYPE, A_UNIQUE, SYSTEM_MAX, system_names)
from fgraph.core.limits import INT64_MAX, INT64_MIN
from fgraph.core.names import check_attribute_name, check_name
from fgraph.core.types import JSON
from fgraph.core.values import Value

if TYPE_CHECKING:
    from fgraph.core.catalog import Catalog


class NewIdent:
    """A placeholder for an identity this transaction allocates."""

    __slots__ = ("kind", "key", "id", "gid")
    kind: str
    key: str | None
    id: int | None      # the id it gets at commit
    gid: bytes | None   # the gid it gets at commit, when known before (an applied event's created list)

    def __init__(self, kind: str, key: str | None) -> None:
        self.kind, self.key, self.id, self.gid = kind, key, None, None

    def __repr__(self) -> str:
        return f"NewIdent({self.kind}, {self.key!r}, id={self.id})"


# An entity or attribute as a plan holds it: a stored id, or the placeholder of one it allocates.
Handle: TypeAlias = int | NewIdent
# A working value's key in a slot: its tag and column value (a ref to a new identity: its NewIdent).
ValueKey: TypeAlias = tuple[int, Any]


class Slot:
    """The working values of one (entity, attribute) during planning, over its live rows."""
    __slots__ = ("e", "a", "live", "present", "removed", "items")
    e: Handle
    a: Handle
    live: dict[ValueKey, int]
    present: dict[ValueKey, tuple[Value, int]]
    removed: dict[ValueKey, int]
    items: set[int]

    def __init__(self, e: Handle, a: Handle, live: dict[ValueKey, int]) -> None:
        self.e, self.a = e, a
        self.live = live            # key -> fact id (live rows before this transaction)
        self.present = {}           # key -> (Value, seq): the working values
        self.removed = {}           # live key -> seq of the removal
        self.items = set()          # request items that touched this slot

    @classmethod
    def over(cls, e: Handle, a: Handle, live: dict[ValueKey, int]) -> "Slot":
        """A slot whose working values start as its live ones."""
        slot = cls(e, a, live)
        for k in live:
            slot.present[k] = (Value(k[0], k[1], None), -1)
        return slot


class Policy(Protocol):
    """What a planner asks of its policy (``plan.WritePolicy``, ``core.replay.ReplayPolicy``)."""

    @property
    def replaying(self) -> bool: ...

    @property
    def allocation_closed(self) -> bool: ...


class Identities:
    """Resolving selectors to stored ids or ``NewIdent`` placeholders, for ``Planner``."""

    if TYPE_CHECKING:  # what Planner, the class this one is a part of, provides
        cat: Catalog
        policy: Policy
        new: list[NewIdent]
        names: dict[str, NewIdent]
        tmps: dict[str, NewIdent]
        resolved: dict[str, Handle]
        eid_overrides: dict[str, Handle]

        def slot(self, e: Handle, a: Handle) -> Slot: ...

        @overload
        def plain_value(self, raw: JSON, *, allocate: Literal[True], allow_missing: Literal[False] = False) -> Value: ...
        @overload
        def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: Literal[False] = False) -> Value | None: ...
        @overload
        def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: bool) -> Any: ...
        def plain_value(self, raw: JSON, *, allocate: bool, allow_missing: bool = False) -> Any: ...

        def basis_owner(self, a: Handle, key: ValueKey) -> int | None: ...

    def _allocate(self, kind: str, key: str | None) -> NewIdent:
        if self.policy.allocation_closed:
            raise ValueTypeError(f"the event uses identity {key!r} that its created list does not name",
                                 "a valid event lists every identity it allocates in `created`")
        ident = NewIdent(kind, key)
        self.new.append(ident)
        if kind == "name":
            self.names[key] = ident  # type: ignore[index]  # a name's placeholder always has its key
        elif kind == "tmp":
            self.tmps[key] = ident  # type: ignore[index]  # and so has a tmp's
        return ident

    def allocate_listed(self, eid: str) -> NewIdent:
        """A new identity for an eid an applied event lists in ``created`` (it keeps that gid)."""
        from fgraph.core.identity import uuid_to_gid
        ident = self._allocate("tmp", "event:" + eid)
        ident.gid = uuid_to_gid(eid)
        return ident

    @overload
    def named(self, name: str, allocate: Literal[True]) -> Handle: ...
    @overload
    def named(self, name: str, allocate: bool) -> Handle | None: ...

    def named(self, name: str, allocate: bool) -> Handle | None:
        found = self.resolved.get(name)
        if found is not None:
            return found
        if name.startswith("fgraph/") and name not in system_names():
            raise SchemaError(f"{name!r} is in the reserved fgraph/ namespace", "choose another name")
        found = self.cat.id_by_name(name)
        if found is None:
            if not allocate:
                return None
            found = self._allocate("name", name)
        self.resolved[name] = found
        return found

    @overload
    def entity(self, sel: JSON, *, allocate: Literal[True], map_id: bool = False) -> Handle: ...
    @overload
    def entity(self, sel: JSON, *, allocate: bool, map_id: bool = False) -> Handle | None: ...

    def entity(self, sel: JSON, *, allocate: bool, map_id: bool = False) -> Handle | None:
        """Resolve an entity selector; None when unknown and not allocating."""
        if isinstance(sel, bool):
            raise ValueTypeError(f"entity selector {sel!r} is not valid", "use a name, id, lookup or tmp")
        if isinstance(sel, str):
            return self.named(check_name(sel, "entity name"), allocate)
        if isinstance(sel, int):
            if not INT64_MIN <= sel <= INT64_MAX:
                raise ValueTypeError(f"entity id {sel} is outside the signed 64-bit range", "use an existing id")
            if sel <= 0 or self.cat.identity(sel) is None:
                raise NotFound(f"entity {sel} was not found", "use an id returned by a transaction")
            return sel
        if isinstance(sel, list):
            return self.lookup(sel)
        if isinstance(sel, dict) and len(sel) == 1:
            if "tmp" in sel:
                token = sel["tmp"]
                if not isinstance(token, str) or token == "":
                    raise ValueTypeError(f"tmp token {token!r} must be a non-empty string", 'write {"tmp": "t1"}')
                return self.tmps.get(token) or self._allocate("tmp", token)
            if "eid" in sel:
                if map_id:
                    raise ValueTypeError("an eid cannot be a map id",
                                         'use the operation form ["assert", {"eid": ...}, attr, value]')
                return self.eid(sel["eid"])
        raise ValueTypeError(f"entity selector {sel!r} is not valid",
                             'use a name, a positive id, ["attr", value], {"tmp": "t"} or {"eid": "uuid"}')

    def eid(self, text: JSON) -> Handle:
        from fgraph.core.identity import check_event_uuid, uuid_to_gid
        check_event_uuid(text, "eid")
        if text in self.eid_overrides:
            return self.eid_overrides[text]
        found = self.cat.id_by_gid(uuid_to_gid(text))
        if found is None and self.policy.replaying:
            raise ValueTypeError(f"the event uses eid {text}, which is neither known here nor in its created list",
                                 "a valid event lists every identity it allocates in `created`")
        if found is None:
            raise NotFound(f"no identity has eid {text}", "use an eid printed by tail, snapshot or get")
        return found

    def lookup(self, sel: list[JSON]) -> int:
        if len(sel) != 2:
            raise ValueTypeError(f"lookup {sel!r} must be [attribute, value]", 'write ["user/email", "a@b"]')
        name, raw = sel
        check_attribute_name(name)
        # A lookup resolves against the transaction's basis (published behaviour): the attribute,
        # its uniqueness and the value's owner as committed, whatever earlier items of this
        # request did to them.
        a = self.cat.id_by_name(name)
        if a is None:
            raise NotFound(f"attribute {name!r} was not found", "declare it unique before looking up by it")
        if not any(v == 1 for _, v in self.slot(a, A_UNIQUE).live):
            raise SchemaError(f"attribute {name!r} is not unique, so it cannot identify an entity",
                              f"declare it with `fgraph declare {name} --unique`")
        value = self.plain_value(raw, allocate=False)
        basis_type = next((v for _, v in self.slot(a, A_TYPE).live), None)
        if value is not None and basis_type is not None and value.t not in TYPE_TAGS.get(basis_type, ()):
            raise ValueTypeError(f"lookup value {raw!r} is {values.logical_name(value.t)}, but {name!r} "
                                 f"requires {basis_type}", f"look up by a {basis_type} value")
        owner = None if value is None else self.basis_owner(a, (value.t, value.v))
        if owner is None:
            raise NotFound(f"no entity has {name} = {raw!r}", "check the value or create the entity first")
        return owner

    @overload
    def attribute(self, name: JSON, *, allocate: Literal[True]) -> Handle: ...
    @overload
    def attribute(self, name: JSON, *, allocate: bool) -> Handle | None: ...

    def attribute(self, name: JSON, *, allocate: bool) -> Handle | None:
        return self.named(check_attribute_name(name), allocate)

    def writable(self, e: Handle) -> None:
        # A transaction is registered by its event UUID, never by a name: named ids need no lookup.
        if isinstance(e, int) and (e <= SYSTEM_MAX or (self.cat.name_of(e) is None and self.cat.is_transaction(e))):
            what = "a system identity" if e <= SYSTEM_MAX else "a transaction"
            raise Unsupported(f"entity {e} is {what} and cannot be written",
                              "write facts about your own entities; use the tx option for transaction facts")

