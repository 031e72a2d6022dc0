"""``declare``: the one map an attribute declaration transacts (spec 03 §4)."""

from __future__ import annotations

from fgraph.core.constraints import TYPE_TAGS
from fgraph.core.errors import SchemaError
from fgraph.core.names import check_attribute_name


def declaration(attr, *, type=None, ref=False, many=None, unique=None, nohistory=None, dims=None, doc=None,
                vector_model=None) -> dict:
    """The map that ``declare`` transacts (spec 03 §4)."""
    check_attribute_name(attr)
    if type is not None and type not in TYPE_TAGS:
        raise SchemaError(f"attribute {attr!r} has unknown type {type!r}",
                          "use one of " + ", ".join(sorted(TYPE_TAGS)))
    data: dict = {"id": attr}
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
