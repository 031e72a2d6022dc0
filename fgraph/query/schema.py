"""The schema as data (spec 13 §11–§13.3): the schema page with its digest, ``attributes()``,
and ``validate`` of one entity against its shape, all at a basis.

Each is a handful of grouped SQL reads: declarations from the live system facts of the
listed identities, observed types and counts from one GROUP BY over the attribute's live
facts, shapes from their live ``fgraph/shape-*`` facts.
"""

from __future__ import annotations

import hashlib

from fgraph.core import values
from fgraph.core.canonical import dumps
from fgraph.core.asof import visible_at
from fgraph.core.errors import ValueTypeError
from fgraph.core.genesis import (A_DIMS, A_DOC, A_MANY, A_NOHISTORY, A_SHAPE, A_SHAPE_ALLOWED, A_SHAPE_CLOSED,
                                 A_SHAPE_REQUIRED, A_TYPE, A_UNIQUE, A_VECTOR_MODEL, SYSTEM_MAX)
from fgraph.core.names import ATTRIBUTE_RE

DECLARED = ((A_TYPE, "type"), (A_MANY, "many"), (A_UNIQUE, "unique"), (A_NOHISTORY, "nohistory"),
            (A_DIMS, "dims"), (A_DOC, "doc"), (A_VECTOR_MODEL, "vector_model"))
BOOLEAN = {"many", "unique", "nohistory"}


def _prefix(prefix):
    if prefix is None or prefix == "":
        return None
    if type(prefix) is not str:
        raise ValueTypeError(f"prefix {prefix!r} is not a string", "pass a name prefix such as \"person/\"")
    return prefix


class SchemaReader:
    """Schema reads at one basis."""

    def __init__(self, reader):
        self.reader, self.conn, self.cat, self.basis = reader, reader.conn, reader.cat, reader.basis
        from fgraph.core.catalog import Catalog
        self.visible = visible_at(self.basis, Catalog(self.conn).latest_tx())

    def listed(self, prefix, include_system: bool) -> list[tuple[int, str]]:
        """(id, name) of the identities the page lists, by name in code-point order."""
        prefix = _prefix(prefix)
        rows = self.conn.execute("SELECT id, name FROM fgraph_ids WHERE name IS NOT NULL AND created_tx <= ?",
                                 (self.basis,)).fetchall()
        out = [(i, n) for i, n in rows if ATTRIBUTE_RE.match(n) and (include_system or i > SYSTEM_MAX)
               and (prefix is None or n.startswith(prefix))]
        return sorted(out, key=lambda row: row[1])

    def declared(self, a: int) -> dict:
        found = {}
        keys = dict(DECLARED)
        for attr, v, t in self.conn.execute(
                f"SELECT a, v, t FROM fgraph_facts WHERE e = ? AND a IN ({', '.join(str(k) for k in keys)}) "
                f"AND {self.visible} ORDER BY id", (a,)):
            key = keys[attr]
            found[key] = bool(v) if key in BOOLEAN else self.reader.value(v, t)
        return {key: found[key] for _, key in DECLARED if key in found}

    @staticmethod
    def effective(declared: dict) -> dict:
        kind = declared.get("type")
        return {"type": kind, "many": declared.get("many", False), "unique": declared.get("unique", False),
                "nohistory": declared.get("nohistory", kind == "vector"), "dims": declared.get("dims"),
                "doc": declared.get("doc"), "vector_model": declared.get("vector_model")}

    def observed(self, a: int) -> dict:
        tags, live, entities = self.conn.execute(
            f"SELECT group_concat(DISTINCT t), count(*), count(DISTINCT e) FROM fgraph_facts WHERE a = ? "
            f"AND {self.visible}", (a,)).fetchone()
        types = sorted({values.logical_name(int(t)) for t in tags.split(",")}) if tags else []
        return {"types": types, "live_facts": live, "entities": entities}

    def shapes(self) -> list[dict]:
        shapes: dict[int, dict] = {}
        for e, a, v in self.conn.execute(
                f"SELECT e, a, v FROM fgraph_facts WHERE a IN ({A_SHAPE_REQUIRED}, {A_SHAPE_ALLOWED}, {A_SHAPE_CLOSED}) "
                f"AND {self.visible} ORDER BY e, id"):
            shape = shapes.setdefault(e, {"allowed": [], "closed": False, "required": []})
            if a == A_SHAPE_CLOSED:
                shape["closed"] = bool(v)
            else:
                shape["required" if a == A_SHAPE_REQUIRED else "allowed"].append(self.name(v))
        return [{"allowed": sorted(s["allowed"], key=str), "closed": s["closed"], "name": self.name(e),
                 "required": sorted(s["required"], key=str)} for e, s in sorted(shapes.items())]

    def name(self, ident: int):
        found = self.cat.name_of(ident)
        return found if found is not None else ident

    def page(self, prefix=None, include_system: bool = False) -> dict:
        attributes = []
        for a, name in self.listed(prefix, include_system):
            declared = self.declared(a)
            attributes.append({"name": name, "declared": declared, "effective": self.effective(declared),
                               "observed": self.observed(a)})
        shapes = self.shapes()
        signed = {"attributes": [{k: item[k] for k in ("declared", "effective", "name")} for item in attributes],
                  "shapes": shapes}
        digest = "sha256:" + hashlib.sha256(dumps(signed).encode("utf-8")).hexdigest()
        return {"attributes": attributes, "basis_tx": self.basis, "digest": digest, "shapes": shapes}

    def attributes(self, prefix=None, include_system: bool = False) -> list[dict]:
        out = []
        for a, name in self.listed(prefix, include_system):
            declared, observed = self.declared(a), self.observed(a)
            effective = self.effective(declared)
            types = observed["types"] or ([declared["type"]] if "type" in declared else [])
            item = {"facts": observed["live_facts"], "many": effective["many"], "name": name,
                    "nohistory": effective["nohistory"], "types": types, "unique": effective["unique"]}
            for key in ("doc", "dims", "vector_model"):
                if key in declared:
                    item[key] = declared[key]
            out.append(item)
        return out

    def validate(self, ref) -> dict:
        e = self.reader.resolve(ref)
        violations: list[dict] = []
        row = self.conn.execute(f"SELECT v FROM fgraph_facts WHERE e = ? AND a = {A_SHAPE} AND t = 0 AND "
                                f"{self.visible} ORDER BY id DESC LIMIT 1", (e,)).fetchone()
        if row is not None and e > SYSTEM_MAX:
            shape = row[0]
            spec = {a: {v for (v,) in self.conn.execute(f"SELECT v FROM fgraph_facts WHERE e = ? AND a = ? AND "
                                                        f"{self.visible}", (shape, a))}
                    for a in (A_SHAPE_REQUIRED, A_SHAPE_ALLOWED, A_SHAPE_CLOSED)}
            present = {a for (a,) in self.conn.execute(f"SELECT DISTINCT a FROM fgraph_facts WHERE e = ? AND "
                                                       f"{self.visible}", (e,))}
            entity, shape_name = self.name(e), self.name(shape)
            missing = sorted((self.name(a) for a in spec[A_SHAPE_REQUIRED] - present), key=str)
            violations += [{"attribute": a, "code": "required", "entity": entity,
                            "message": "required attribute is missing", "shape": shape_name} for a in missing]
            if 1 in spec[A_SHAPE_CLOSED]:
                allowed = spec[A_SHAPE_REQUIRED] | spec[A_SHAPE_ALLOWED]
                extra = sorted((self.name(a) for a in present if a > SYSTEM_MAX and a not in allowed), key=str)
                violations += [{"attribute": a, "code": "allowed", "entity": entity,
                                "message": "attribute is not allowed by the closed shape", "shape": shape_name}
                               for a in extra]
        return {"basis_tx": self.basis, "valid": not violations, "violations": violations}
