"""``declare``: the one map an attribute declaration transacts (spec 03 §4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fgraph.core.values import TYPE_TAGS
from fgraph.core.errors import SchemaError
from fgraph.core.names import check_attribute_name

if TYPE_CHECKING:
    from fgraph.core.types import JSON, JSONObject


def declaration(attr: str, *, type: str | None = None, ref: bool = False, many: bool | None = None,
                unique: bool | None = None, nohistory: bool | None = None, dims: int | None = None,
                doc: str | None = None, vector_model: str | None = None) -> JSONObject:
    """The map that ``declare`` transacts (spec 03 §4)."""
    check_attribute_name(attr)
    if type is not None and type not in TYPE_TAGS:
        raise SchemaError(f"attribute {attr!r} has unknown type {type!r}",
                          "use one of " + ", ".join(sorted(TYPE_TAGS)))
    data: JSONObject = {"id": attr}
    if ref:
        if type is not None and type != "ref":
            raise SchemaError(f"--ref conflicts with type {type!r}", "declare either a ref or another type")
        data["fgraph/type"] = "ref"
    elif type is not None:
        data["fgraph/type"] = type
    for key, val in (("fgraph/many", many), ("fgraph/unique", unique), ("fgraph/nohistory", nohistory),
                     ("fgraph/dims", dims), ("fgraph/doc", doc), ("fgraph/vector-model", vector_model)):
        if val is not None:
            data[key] = val
    if len(data) == 1:
        raise SchemaError(f"nothing to declare for {attr!r}", "pass at least one of type, many, unique, ...")
    return data


def shape_request(name: str, *, required: Sequence[str] = (), allowed: Sequence[str] = (),
                  closed: bool = False) -> list[JSON]:
    """The request that ``declare_shape`` transacts (spec 13 §13.1): retract the shape's three
    fields, then assert them again, so a repeat is a no-op and a change replaces the shape."""
    from fgraph.core.errors import Unsupported
    from fgraph.core.genesis import system_identities
    from fgraph.core.names import check_name
    if type(name) is str and name in {row["name"] for row in system_identities()}:
        raise Unsupported(f"shape name {name!r} is a system identity", "name the shape, e.g. shape/article")
    if type(name) is not str or name.startswith("fgraph/"):
        raise SchemaError(f"shape name {name!r} is not valid", "name the shape, e.g. shape/article")
    check_name(name, "shape name")
    lists: dict[str, list[str]] = {}
    for key, raw in (("required", required), ("allowed", allowed)):
        if type(raw) not in (list, tuple) or not all(type(a) is str for a in raw):
            raise SchemaError(f"shape {key} must be an array of attribute names", f'pass {key}=["ns/attr"]')
        for attr in raw:
            check_attribute_name(attr)
        lists[key] = sorted(set(raw))
    if type(closed) is not bool:
        raise SchemaError(f"shape closed must be true or false, not {closed!r}", "pass closed=True or False")
    if closed:
        lists["allowed"] = sorted(set(lists["allowed"]) | set(lists["required"]))
    data: JSONObject = {"id": name, "fgraph/shape-closed": closed}
    if lists["required"]:
        data["fgraph/shape-required"] = [{"ref": a} for a in lists["required"]]
    if lists["allowed"]:
        data["fgraph/shape-allowed"] = [{"ref": a} for a in lists["allowed"]]
    return [["retract", name, "fgraph/shape-required"], ["retract", name, "fgraph/shape-allowed"],
            ["retract", name, "fgraph/shape-closed"], data]
