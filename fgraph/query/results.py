"""From distinct bindings to rows (spec 12 §6.2–§6.5): order, aggregate, render, drop
duplicate renderings, then offset and limit. Reads the final relation once, in first-seen
order; only the result itself is held in memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from fgraph.core import values
from fgraph.core.canonical import dumps
from fgraph.core.errors import QueryError
from fgraph.core.limits import INT64_MAX, INT64_MIN
from fgraph.core.values import TAG_FLOAT, TAG_INSTANT, TAG_INT, TAG_REF
from fgraph.query.syntax import AGGREGATES

NUMERIC_TAGS = (TAG_INT, TAG_FLOAT, TAG_REF, TAG_INSTANT)  # refs and instants as stored integers (§6.3 quirk)


class Result(Mapping):
    """An immutable mapping with exactly ``columns`` and ``rows``, also readable as attributes."""

    __slots__ = ("_data",)

    def __init__(self, columns: list, rows: list):
        object.__setattr__(self, "_data", {"columns": list(columns), "rows": rows})

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return 2

    def __getattr__(self, name):
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("a query Result is immutable")

    def __repr__(self) -> str:
        return f"Result(columns={self._data['columns']!r}, rows={self._data['rows']!r})"

    def to_dict(self) -> dict:
        return {"columns": list(self._data["columns"]), "rows": [list(r) for r in self._data["rows"]]}


class Renderer:
    """Local renderings of stored values (02 §3.2), with names and blobs cached per query."""

    def __init__(self, cat, terms):
        self.cat, self.terms, self.names = cat, terms, {}

    def ref(self, ident: int):
        if ident not in self.names:
            name = self.cat.name_of(ident)
            self.names[ident] = name if name is not None else ident
        return self.names[ident]

    def __call__(self, tag: int, stored):
        blob = self.terms.blob(stored) if tag in values.INDIRECT_TAGS else None
        return values.render(tag, stored, blob, self.ref)


def sort_key(rendered):
    """Order as rendered (§6.4): bool < number < text < object; objects by canonical JSON."""
    if isinstance(rendered, bool):
        return (0, rendered)
    if isinstance(rendered, (int, float)):
        return (1, rendered)
    if isinstance(rendered, str):
        return (2, rendered)
    return (3, dumps(rendered))


def aggregate(kind: str, pairs: list, column: str):
    """One aggregate over a group's (tag, stored) values, in binding order (§6.3)."""
    if kind == "count":
        return len(pairs)
    if kind == "count-distinct":
        return len({(t, v if t != TAG_FLOAT else ("f", v)) for t, v in pairs})
    if not pairs:
        return None
    for t, _ in pairs:
        if t not in NUMERIC_TAGS:
            raise QueryError(f"{column} needs numbers, found a {values.logical_name(t)} value",
                             "aggregate a numeric attribute")
    if kind in ("min", "max"):
        best = pairs[0][1]
        for _, v in pairs[1:]:
            if (v < best) if kind == "min" else (v > best):
                best = v
        return best
    total, floating = 0, False
    for t, v in pairs:
        if t == TAG_FLOAT:
            floating = True
            total = float(total) + v
        else:
            total = total + v if not floating else total + float(v)
        if not floating and not INT64_MIN <= total <= INT64_MAX:
            raise QueryError(f"{column} overflows a 64-bit integer", "sum fewer or smaller values")
    if floating and not math.isfinite(total):
        raise QueryError(f"{column} is not finite", "sum values of a smaller magnitude")
    if kind == "sum":
        return total
    return total / len(pairs)
