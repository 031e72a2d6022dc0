"""From distinct bindings to rows (spec 12 §6.2–§6.5): order, aggregate, render, drop rows
whose rendering repeats, then offset and limit.

Aggregates whose order (if any) is by grouping variables or aggregate columns stream the final
relation through one accumulator per group, so their memory does not grow with the store; any
other query reads its bindings (the answer itself) into memory to sort and render them.
"""

from __future__ import annotations

from fgraph.core.canonical import dumps
from fgraph.core.errors import QueryError
from fgraph.query.datalog import syntax
from fgraph.query.datalog.results import Accumulator, Result, aggregate, sort_key
from fgraph.query.datalog.syntax import AGGREGATES


def _streamable(query: syntax.Query) -> bool:
    if not any(f.kind in AGGREGATES for f in query.find):
        return False
    group_level = {f.var for f in query.find if f.kind == "var"} | {f.column for f in query.find}
    return all(key in group_level for key, _ in query.order)


def _float_safe(pair):
    return pair if pair[0] != 3 else (3, repr(pair[1]))


def _aggregate_stream(conn, query: syntax.Query, final, render) -> Result:
    group_vars = [f.var for f in query.find if f.kind == "var"]
    aggregates = [(k, f) for k, f in enumerate(query.find) if f.kind in AGGREGATES]
    groups: dict = {}
    columns = ", ".join(final.columns()) or "0"
    for row in conn.execute(f"SELECT {columns} FROM {final.table} ORDER BY rowid"):
        pair = {var: (row[2 * k], row[2 * k + 1]) for var, k in final.index.items()}
        key = tuple(_float_safe(pair[v]) for v in group_vars)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ({v: pair[v] for v in group_vars}, [Accumulator(f.kind, f.column) for _, f in aggregates])
        for (_, f), acc in zip(aggregates, group[1]):
            acc.add(*pair[f.var])
    if not group_vars and not groups:
        groups[()] = ({}, [Accumulator(f.kind, f.column) for _, f in aggregates])
    rows = []
    for first, accs in groups.values():
        results = iter([acc.result() for acc in accs])
        rows.append([render(*first[f.var]) if f.kind == "var" else next(results) for f in query.find])
    rows = [row for row, _ in _distinct([(row, None) for row in rows])]
    by_column = {f.column: k for k, f in enumerate(query.find)}
    by_var = {f.var: k for k, f in enumerate(query.find) if f.kind == "var"}
    for key, descending in reversed(query.order):
        k = by_var[key] if key in by_var else by_column[key]
        rows.sort(key=lambda r: sort_key(r[k]), reverse=descending)
    return _page(query, [f.column for f in query.find], rows)


def _page(query: syntax.Query, columns: list, unique: list) -> Result:
    """``offset`` and ``limit`` over rows already distinct by rendering."""
    end = None if query.limit is None else query.offset + query.limit
    return Result(columns, unique[query.offset:end])


def shape(conn, query: syntax.Query, final, render, puller) -> Result:
    """The rows of ``query`` from its final relation (spec 12 §6.2 steps 2–5)."""
    if _streamable(query):
        return _aggregate_stream(conn, query, final, render)
    columns = [f.column for f in query.find]
    index = final.index
    raw = conn.execute(f"SELECT {', '.join(final.columns()) or '0'} FROM {final.table} ORDER BY rowid").fetchall()
    bindings = [{var: (row[2 * k], row[2 * k + 1]) for var, k in index.items()} for row in raw]
    cell_cache: dict = {}

    def cell(pair):
        key = pair if pair[0] != 3 else (3, repr(pair[1]))
        if key not in cell_cache:
            cell_cache[key] = render(*pair)
        return cell_cache[key]

    pulls: dict = {}
    for item in query.find:
        if item.kind == "pull":
            for b in bindings:
                tag, ident = b[item.var]
                if tag != 0:
                    raise QueryError(f"pull({item.var}) found a {cell(b[item.var])!r}, which is not an entity",
                                     "pull only variables bound to entities")
                pulls[(item.column, ident)] = puller.pull(ident, item.pattern)
    aggregated = any(f.kind in AGGREGATES for f in query.find)
    group_vars = [f.var for f in query.find if f.kind == "var"] if aggregated else []

    def group_key(b):
        return tuple(b[v] if b[v][0] != 3 else (3, repr(b[v][1])) for v in group_vars)

    # Each output row (a group, with aggregates) keeps the first binding that produced it, in
    # evaluation order; `order` then sorts the rows stably by that binding's values (docs/query.md,
    # "Order"). Sorting every binding first would let a later binding decide where a row goes.
    entries: list = []  # (row, its first binding or None)
    if aggregated:
        groups: dict = {}
        for b in bindings:
            groups.setdefault(group_key(b), []).append(b)
        if not group_vars and not groups:
            groups[()] = []
        for members in groups.values():
            first = members[0] if members else None
            entries.append(([cell(first[f.var]) if f.kind == "var"
                             else aggregate(f.kind, [m[f.var] for m in members], f.column)
                             for f in query.find], first))
    else:
        for b in bindings:
            entries.append(([pulls[(f.column, b[f.var][1])] if f.kind == "pull" else cell(b[f.var])
                             for f in query.find], b))
    entries = _distinct(entries)
    by_column = {f.column: k for k, f in enumerate(query.find)}

    def value_of(key, entry):
        row, first = entry
        if key in index:
            if first is None:
                raise QueryError(f"order variable {key!r} is not bound in every result row",
                                 "an aggregate over no rows has no binding to order by; order by an aggregate "
                                 "column, or drop the order")
            return cell(first[key])
        if key in by_column:
            return row[by_column[key]]
        raise QueryError(f"order key {key!r} is unknown", "order by a bound variable or a find column")

    for key, descending in reversed(query.order):
        entries.sort(key=lambda entry: sort_key(value_of(key, entry)), reverse=descending)
    return _page(query, columns, [row for row, _ in entries])


def _distinct(entries: list) -> list:
    """The entries whose row's canonical JSON is new, in order (a row keeps its first binding)."""
    seen, unique = set(), []
    for entry in entries:
        text = dumps(entry[0])
        if text not in seen:
            seen.add(text)
            unique.append(entry)
    return unique
