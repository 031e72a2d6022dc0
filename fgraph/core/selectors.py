"""Identities and selectors of one plan (spec 03 §3): names, ids, eids, lookups and tmp ids
resolved against the basis, and the placeholders of the identities the plan allocates.

A part of ``Planner`` (its base class): the selector rules are one seam of the planner, kept here
so plan.py holds the working set and the request items.
"""

from __future__ import annotations

from fgraph.core import values
from fgraph.core.constraints import TYPE_TAGS
from fgraph.core.errors import NotFound, SchemaError, Unsupported, ValueTypeError
from fgraph.core.genesis import (A_TYPE, A_UNIQUE, SYSTEM_MAX, system_names)
from fgraph.core.limits import INT64_MAX, INT64_MIN
from fgraph.core.names import check_attribute_name, check_name


class NewIdent:
    """A placeholder for an identity this transaction allocates."""

    __slots__ = ("kind", "key", "id", "gid")

    def __init__(self, kind: str, key: str | None):
        self.kind, self.key, self.id, self.gid = kind, key, None, None

    def __repr__(self) -> str:
        return f"NewIdent({self.kind}, {self.key!r}, id={self.id})"


class Identities:
    """Resolving selectors to stored ids or ``NewIdent`` placeholders, for ``Planner``."""

    def _allocate(self, kind: str, key: str | None) -> NewIdent:
        if self.policy.allocation_closed:
            raise ValueTypeError(f"the event uses identity {key!r} that its created list does not name",
                                 "a valid event lists every identity it allocates in `created`")
        ident = NewIdent(kind, key)
        self.new.append(ident)
        if kind == "name":
            self.names[key] = ident
        elif kind == "tmp":
            self.tmps[key] = ident
        return ident

    def allocate_listed(self, eid: str) -> NewIdent:
        """A new identity for an eid an applied event lists in ``created`` (it keeps that gid)."""
        from fgraph.core.identity import uuid_to_gid
        ident = self._allocate("tmp", "event:" + eid)
        ident.gid = uuid_to_gid(eid)
        return ident

    def named(self, name: str, allocate: bool):
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

    def entity(self, sel, *, allocate: bool, map_id: bool = False):
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

    def eid(self, text):
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

    def lookup(self, sel: list):
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

    def attribute(self, name, *, allocate: bool):
        return self.named(check_attribute_name(name), allocate)

    def writable(self, e) -> None:
        # A transaction is registered by its event UUID, never by a name: named ids need no lookup.
        if isinstance(e, int) and (e <= SYSTEM_MAX or (self.cat.name_of(e) is None and self.cat.is_transaction(e))):
            what = "a system identity" if e <= SYSTEM_MAX else "a transaction"
            raise Unsupported(f"entity {e} is {what} and cannot be written",
                              "write facts about your own entities; use the tx option for transaction facts")

