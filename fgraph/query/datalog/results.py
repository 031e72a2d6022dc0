"""What a query's rows are made of (spec 12 §6.2–§6.4): the ``Result`` mapping, the ``Renderer``
of stored values, the order of rendered values (``sort_key``) and the aggregates with their
``Accumulator``; ``shaping`` puts them together, from distinct bindings to rows.
"""

from __future__ import annotations

import math

from fgraph.core import values
from fgraph.core.canonical import dumps
from fgraph.core.errors import QueryError
from fgraph.core.limits import INT64_MAX, INT64_MIN
from fgraph.core.mappings import FrozenMapping
from fgraph.core.values import TAG_FLOAT, TAG_INSTANT, TAG_INT, TAG_REF

NUMERIC_TAGS = (TAG_INT, TAG_FLOAT, TAG_REF, TAG_INSTANT)  # refs and instants as stored integers (§6.3 quirk)


class Result(FrozenMapping):
    """A query's answer: an immutable mapping with exactly ``columns`` and ``rows``, also attributes."""

    __slots__ = ()

    def __init__(self, columns: list, rows: list):
        super().__init__({"columns": list(columns), "rows": rows})

    def __repr__(self) -> str:
        return f"Result(columns={self['columns']!r}, rows={self['rows']!r})"

    def to_dict(self) -> dict:
        return {"columns": list(self["columns"]), "rows": [list(r) for r in self["rows"]]}


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


class Accumulator:
    """One aggregate of one group, fed (tag, stored) values in binding order (§6.3); memory is
    constant except for ``count-distinct``, which keeps the distinct values."""

    def __init__(self, kind: str, column: str):
        self.kind, self.column = kind, column
        self.n, self.total, self.floating, self.best = 0, 0, False, None
        self.distinct: set = set()

    def add(self, t: int, v) -> None:
        self.n += 1
        if self.kind == "count":
            return
        if self.kind == "count-distinct":
            self.distinct.add((t, v))
            return
        if t not in NUMERIC_TAGS:
            raise QueryError(f"{self.column} needs numbers, found a {values.logical_name(t)} value",
                             "aggregate a numeric attribute")
        if self.kind in ("min", "max"):
            if self.best is None or ((v < self.best) if self.kind == "min" else (v > self.best)):
                self.best = v
            return
        if t == TAG_FLOAT or self.floating:
            self.floating = True
            self.total = float(self.total) + float(v)
        else:
            self.total += v
            if not INT64_MIN <= self.total <= INT64_MAX:
                raise QueryError(f"{self.column} overflows a 64-bit integer", "sum fewer or smaller values")

    def result(self):
        if self.kind == "count":
            return self.n
        if self.kind == "count-distinct":
            return len(self.distinct)
        if self.n == 0:
            return None
        if self.kind in ("min", "max"):
            return self.best
        if self.floating and not math.isfinite(self.total):
            raise QueryError(f"{self.column} is not finite", "sum values of a smaller magnitude")
        return self.total if self.kind == "sum" else self.total / self.n


def aggregate(kind: str, pairs: list, column: str):
    """One aggregate over a group's (tag, stored) values, in binding order (§6.3)."""
    acc = Accumulator(kind, column)
    for t, v in pairs:
        acc.add(t, v)
    return acc.result()
