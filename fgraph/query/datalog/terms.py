"""Constants of a query resolved against the store at the view's basis (spec 12 §3).

Entity and attribute constants become ids, value constants ``(tag, stored value)`` pairs, so
evaluation binds them as SQL parameters. An unknown name, id or eid is ``NO_MATCH`` (the
clause matches nothing); a constant that is not a constant at all is a ``QueryError``.
"""

from __future__ import annotations

from fgraph.core import values
from fgraph.core.catalog import Catalog
from fgraph.core.errors import FgraphError, QueryError
from fgraph.core.genesis import A_UNIQUE
from fgraph.core.identity import uuid_to_gid
from fgraph.core.limits import INT64_MAX, INT64_MIN, UUID_RE
from fgraph.core.names import ATTRIBUTE_RE
from fgraph.core.values import TAG_REF, RefWire

NO_MATCH = None


class Terms:
    """Resolves constants for one query at one basis; ``visible`` is the SQL visibility of facts."""

    def __init__(self, conn, cat: Catalog, visible: str):
        self.conn, self.cat, self.visible = conn, cat, visible

    def entity(self, raw, where: str):
        """An entity constant → id, or NO_MATCH when it names nothing at this basis."""
        t = type(raw)
        if t is str:
            return self.cat.id_by_name(raw)
        if t is int:
            if not INT64_MIN <= raw <= INT64_MAX:
                raise QueryError(f"{where}: id {raw} is outside the signed 64-bit range", "use an existing id")
            return raw if raw > 0 and self.cat.identity(raw) is not None else NO_MATCH
        if t is dict and len(raw) == 1 and "eid" in raw:
            eid = raw["eid"]
            if type(eid) is not str or not UUID_RE.match(eid):
                raise QueryError(f"{where}: eid {eid!r} is not a UUID", 'write {"eid": "xxxxxxxx-xxxx-..."}')
            return self.cat.id_by_gid(uuid_to_gid(eid))
        if t is dict and len(raw) == 1 and "ref" in raw:
            return self.entity(raw["ref"], where)
        if t is list and len(raw) == 2 and type(raw[0]) is str:
            return self.lookup(raw[0], raw[1], where)
        raise QueryError(f"{where}: {raw!r} is not an entity constant",
                         'use a name, a positive id, {"eid": uuid}, [unique-attr, value] or {"ref": selector}')

    def lookup(self, attr: str, raw, where: str):
        a = self.attribute(attr, where)
        if a is NO_MATCH:
            return NO_MATCH
        unique = self.conn.execute(f"SELECT v FROM fgraph_facts WHERE e = ? AND a = ? AND {self.visible} LIMIT 1",
                                   (a, A_UNIQUE)).fetchone()
        if unique is None or unique[0] != 1:
            raise QueryError(f"{where}: lookup through {attr!r}, which is not unique", "look up by a unique attribute")
        value = self.value(raw, where)
        if value is NO_MATCH:
            return NO_MATCH
        row = self.conn.execute(f"SELECT e FROM fgraph_facts WHERE a = ? AND t = ? AND v = ? AND {self.visible} "
                                "LIMIT 1", (a, value[0], value[1])).fetchone()
        return row[0] if row else NO_MATCH

    def attribute(self, raw, where: str):
        if type(raw) is not str or not ATTRIBUTE_RE.match(raw):
            raise QueryError(f"{where}: attribute {raw!r} is not an attribute name", 'write "namespace/name"')
        return self.cat.id_by_name(raw)

    def value(self, raw, where: str):
        """A value constant → (tag, stored value), or NO_MATCH for a ref to an unknown entity."""
        try:
            wire = values.from_wire(raw) if type(raw) is not bytes else None
        except FgraphError as exc:
            raise QueryError(f"{where}: {exc.message}", exc.hint or "write a JSON value or a typed wrapper") from None
        if wire is None:
            raise QueryError(f"{where}: {raw!r} is not a value constant", "write a JSON value or a typed wrapper")
        if isinstance(wire, RefWire):
            target = self.entity(wire.selector, where)
            return NO_MATCH if target is NO_MATCH else (TAG_REF, target)
        return (wire.t, wire.v)

    def blob(self, key):
        row = self.conn.execute("SELECT data FROM fgraph_blobs WHERE hash = ?", (key,)).fetchone()
        return row[0] if row else None
