"""``schema/1`` manifests (spec 13 §14): export the declared schema, normalize a desired one,
and check the difference. Reads only; applying a manifest is a write (not here yet).
"""

from __future__ import annotations

import hashlib

from fgraph.core.canonical import dumps
from fgraph.core.values import TYPE_TAGS
from fgraph.core.errors import SchemaError
from fgraph.core.genesis import SYSTEM_MAX
from fgraph.core.names import ATTRIBUTE_RE
from fgraph.query.schema import DECLARED, SchemaReader

FORMAT = "schema/1"
DECLARED_KEYS = frozenset(name for _, name in DECLARED)
TOP_KEYS = frozenset({"fgraph", "digest", "attributes", "shapes"})


def digest(attributes: list, shapes: list) -> str:
    body = {"attributes": attributes, "fgraph": FORMAT, "shapes": shapes}
    return "sha256:" + hashlib.sha256(dumps(body).encode("utf-8")).hexdigest()


def _shape(name, required, allowed, closed) -> dict:
    required, allowed = sorted(set(required)), sorted(set(allowed))
    if closed:
        allowed = sorted(set(allowed) | set(required))
    return {"allowed": allowed, "closed": closed, "name": name, "required": required}


def export(reader) -> dict:
    """The current schema as a normalized manifest with its digest (§14.1)."""
    schema = SchemaReader(reader)
    attributes = []
    for a, name in schema.listed(None, False):
        declared = schema.declared(a)
        if declared and a > SYSTEM_MAX:
            attributes.append({"declared": declared, "name": name})
    shapes = sorted((_shape(s["name"], s["required"], s["allowed"], s["closed"]) for s in schema.shapes()),
                    key=lambda s: str(s["name"]))
    return {"attributes": attributes, "digest": digest(attributes, shapes), "fgraph": FORMAT, "shapes": shapes}


def _bad(message: str) -> SchemaError:
    return SchemaError(f"schema manifest: {message}", "fix the manifest (see docs/schema.md) and try again")


def _declared(name: str, declared) -> dict:
    if type(declared) is not dict or set(declared) - DECLARED_KEYS:
        raise _bad(f"attribute {name!r} declared must be an object with keys among {sorted(DECLARED_KEYS)}")
    for key, value in declared.items():
        ok = {"type": lambda v: type(v) is str and v in TYPE_TAGS,
              "many": lambda v: type(v) is bool, "unique": lambda v: type(v) is bool,
              "nohistory": lambda v: type(v) is bool, "dims": lambda v: type(v) is int and v > 0,
              "doc": lambda v: type(v) is str, "vector_model": lambda v: type(v) is str and v.strip() != ""}[key]
        if not ok(value):
            raise _bad(f"attribute {name!r} has an invalid {key} {value!r}")
    return dict(sorted(declared.items()))


def normalize(manifest) -> dict:
    """A desired manifest, checked and normalized (§14.2), with its digest."""
    if type(manifest) is not dict or manifest.get("fgraph") != FORMAT or set(manifest) - TOP_KEYS:
        raise _bad('expected an object {"fgraph": "schema/1", "attributes": [...], "shapes": [...]}')
    raw_attributes, raw_shapes = manifest.get("attributes", []), manifest.get("shapes", [])
    if type(raw_attributes) is not list or type(raw_shapes) is not list:
        raise _bad("attributes and shapes must be arrays")
    attributes, names = [], set()
    for item in raw_attributes:
        if type(item) is not dict or set(item) != {"name", "declared"}:
            raise _bad(f"attribute item {item!r} must be exactly {{name, declared}}")
        name = item["name"]
        if type(name) is not str or not ATTRIBUTE_RE.match(name):
            raise _bad(f"attribute name {name!r} is not ns/name")
        if name in names:
            raise _bad(f"attribute {name!r} is listed twice")
        names.add(name)
        declared = _declared(name, item["declared"])
        if declared:
            attributes.append({"declared": declared, "name": name})
    shapes, shape_names = [], set()
    for item in raw_shapes:
        if type(item) is not dict or set(item) != {"name", "required", "allowed", "closed"}:
            raise _bad(f"shape item {item!r} must be exactly {{name, required, allowed, closed}}")
        name = item["name"]
        if type(name) is not str or name in shape_names:
            raise _bad(f"shape name {name!r} is not a string or is listed twice")
        shape_names.add(name)
        for key in ("required", "allowed"):
            if type(item[key]) is not list or not all(type(a) is str and ATTRIBUTE_RE.match(a) for a in item[key]):
                raise _bad(f"shape {name!r} {key} must be a list of attribute names")
        if type(item["closed"]) is not bool:
            raise _bad(f"shape {name!r} closed must be true or false")
        shapes.append(_shape(name, item["required"], item["allowed"], item["closed"]))
    attributes.sort(key=lambda a: a["name"])
    shapes.sort(key=lambda s: s["name"])
    return {"attributes": attributes, "digest": digest(attributes, shapes), "fgraph": FORMAT, "shapes": shapes}


def check(reader, manifest) -> dict:
    """What applying ``manifest`` would change (§14.3); reads only."""
    desired, current = normalize(manifest), export(reader)
    changes = []
    for kind, key in (("attribute", "attributes"), ("shape", "shapes")):
        now = {item["name"]: item for item in current[key]}
        wanted = {item["name"]: item for item in desired[key]}
        for name in sorted(set(now) | set(wanted), key=str):
            before, after = now.get(name), wanted.get(name)
            if kind == "attribute":
                before = before["declared"] if before else None
                after = after["declared"] if after else None
            if before != after:
                changes.append({"after": after, "before": before, "kind": kind, "name": name})
    return {"basis_tx": reader.basis, "changes": changes, "current_digest": current["digest"],
            "desired_digest": desired["digest"], "valid": not changes}


SHAPE_KEYS = (("required", "fgraph/shape-required"), ("allowed", "fgraph/shape-allowed"),
              ("closed", "fgraph/shape-closed"))
DECLARED_ATTRS = {name: f"fgraph/{name.replace('_', '-')}" for _, name in DECLARED}
ORDER = {"fgraph/many": 5, "fgraph/unique": 6, "fgraph/nohistory": 7, "fgraph/type": 8, "fgraph/dims": 9,
         "fgraph/doc": 10, "fgraph/vector-model": 14, "fgraph/shape-required": 16, "fgraph/shape-allowed": 17,
         "fgraph/shape-closed": 18}


def _live(reader, name, attrs) -> list[tuple[str, object, int]]:
    """(attribute name, rendered value, fact id) of ``name``'s live facts of ``attrs``."""
    e = reader.cat.id_by_name(name)
    if e is None:
        return []
    ids = {reader.cat.id_by_name(a): a for a in attrs}
    rows = reader.conn.execute(
        f"SELECT a, v, t, id FROM fgraph_facts WHERE e = ? AND a IN ({', '.join(str(i) for i in ids)}) "
        f"AND {reader.visible()} ORDER BY a, id", (e,)).fetchall()
    return [(ids[a], reader.value(v, t), fact_id) for a, v, t, fact_id in rows]


class ManifestPlan:
    """The facts of ``apply_schema_manifest``, planned inside its write transaction from the schema
    as it stands there, so a writer in between cannot make the plan stale."""

    __slots__ = ("desired", "path")

    def __init__(self, desired: dict, path: str):
        self.desired, self.path = desired, path

    def plan(self, planner) -> None:
        from fgraph.core.reads import Reader
        planner.plan_data(changes(Reader(planner.cat.conn, None, self.path), self.desired))


def apply_request(manifest, path: str) -> tuple[ManifestPlan, dict]:
    """The planned changes and the request-hash envelope of ``apply_schema_manifest`` (§14.4)."""
    from fgraph.core.errors import Unsupported
    from fgraph.core.genesis import system_identities
    desired = normalize(manifest)
    system = {row["name"] for row in system_identities()}
    for item in desired["attributes"] + desired["shapes"]:
        if item["name"] in system:
            raise Unsupported(f"schema manifest names the system identity {item['name']!r}",
                              "system attributes are fixed; remove it from the manifest")
    return ManifestPlan(desired, path), {"manifest": desired, "operation": "schema-apply"}


def changes(reader, desired: dict) -> list:
    """Per attribute then per shape, in name order: retract what is not desired (by attribute
    id, then fact id) and assert what is missing (keys and list values in name order)."""
    current = export(reader)
    data: list = []
    wanted_attrs = {a["name"]: a["declared"] for a in desired["attributes"]}
    for name in sorted({a["name"] for a in current["attributes"]} | set(wanted_attrs)):
        wanted = {DECLARED_ATTRS[k]: v for k, v in wanted_attrs.get(name, {}).items()}
        live = _live(reader, name, ORDER.keys() - {a for _, a in SHAPE_KEYS})
        data += [["retract", name, a, v] for a, v, _ in live if wanted.get(a, _MISSING) != v]
        kept = {a for a, v, _ in live if wanted.get(a, _MISSING) == v}
        missing = {a: v for a, v in wanted.items() if a not in kept}
        if missing:
            data.append({"id": name, **dict(sorted(missing.items()))})
    wanted_shapes = {s["name"]: s for s in desired["shapes"]}
    for name in sorted({s["name"] for s in current["shapes"]} | set(wanted_shapes), key=str):
        shape = wanted_shapes.get(name)
        wanted: dict = {}
        if shape is not None:
            wanted = {"fgraph/shape-closed": [shape["closed"]],
                      "fgraph/shape-required": [{"ref": a} for a in shape["required"]],
                      "fgraph/shape-allowed": [{"ref": a} for a in shape["allowed"]]}
        live = _live(reader, name, [a for _, a in SHAPE_KEYS])
        data += [["retract", name, a, v] for a, v, _ in live if v not in wanted.get(a, [])]
        kept = {(a, dumps(v)) for a, v, _ in live if v in wanted.get(a, [])}
        missing = {a: [v for v in values if (a, dumps(v)) not in kept] for a, values in sorted(wanted.items())}
        missing = {a: values for a, values in missing.items() if values}
        if missing:
            record = {"id": name}
            for a, values in missing.items():
                record[a] = values[0] if a == "fgraph/shape-closed" else values
            data.append(record)
    return data


class _Missing:
    """Marks a declaration key the manifest does not want."""


_MISSING = _Missing()
