"""``q`` and ``explain`` at a basis (spec 12 §1, §6, §9–§11): parse, bind ``args``, evaluate
``where`` in SQLite, then order, aggregate, render, deduplicate and page the result.

Runs in one read transaction. The intermediate relations are TEMP tables: on a handle opened
read-only (``SQLITE_OPEN_READONLY``) the main database stays unwritable by its open flags, so
``query_only`` is lifted for the TEMP schema only while a query runs.
"""

from __future__ import annotations

from contextlib import contextmanager

from fgraph.core.catalog import Catalog
from fgraph.core.canonical import dumps
from fgraph.core.errors import QueryError
from fgraph.core.txn import read_transaction
from fgraph.query import planner, syntax
from fgraph.query.engine import Engine
from fgraph.query.pull import Puller
from fgraph.query.results import Renderer, Result, aggregate, sort_key

__all__ = ["DEFAULT_BUDGET", "Result", "ask", "explain"]
from fgraph.query.syntax import AGGREGATES
from fgraph.query.terms import NO_MATCH, Terms

DEFAULT_BUDGET = 100_000


def visibility(basis: int, latest: int, alias: str = "") -> str:
    p = f"{alias}." if alias else ""
    if basis >= latest:
        return f"{p}rx IS NULL"
    return f"{p}tx <= {basis} AND ({p}rx IS NULL OR {p}rx > {basis})"


@contextmanager
def scratch(conn):
    """TEMP tables allowed for the duration; the main database's protection is its open flags."""
    query_only = conn.execute("PRAGMA query_only").fetchone()[0]
    if query_only and not conn.readonly("main"):
        raise QueryError("queries need TEMP tables on a read-only handle opened read-only",
                         "open the database with fgraph.connect(path, read_only=True)")
    if query_only:
        conn.execute("PRAGMA query_only = 0")
    try:
        yield
    finally:
        if query_only:
            conn.execute("PRAGMA query_only = 1")


def _split(query, args, clauses: dict):
    if clauses:
        if query is not None:
            raise QueryError("pass either a query object or clauses as keywords, not both",
                             "call db.q({...}) or db.q(find=[...], where=[...])")
        query = dict(clauses)
        if "args" in query:
            args = query.pop("args")
    return query, args


def _bind_args(query: syntax.Query, args, terms: Terms) -> list:
    if args is None:
        args = {}
    if type(args) is not dict:
        raise QueryError("args must be an object keyed by the in variables", 'pass {"?min": 34}')
    row = []
    for var in query.inputs:
        if var not in args:
            raise QueryError(f"in variable {var} has no entry in args", f'pass args {{"{var}": value}}')
        raw = args[var]
        if type(raw) in (list, tuple):
            raise QueryError(f"arg {var} is a collection; collections are not supported", "pass one value")
        found = terms.value(raw, f"arg {var}")
        row += list(found) if found is not NO_MATCH else [0, 0]
    return row


def ask(conn, basis: int, query=None, args=None, *, budget: int = DEFAULT_BUDGET, **clauses) -> Result:
    """``q``: the rows of ``query`` at ``basis``."""
    query, args = _split(query, args, clauses)
    parsed = syntax.parse(query, strict=True)
    with read_transaction(conn), scratch(conn):
        cat = Catalog(conn, basis)
        latest = Catalog(conn).latest_tx()
        terms = Terms(conn, cat, visibility(basis, latest))
        engine = Engine(conn, terms, basis, latest, parsed.source, budget, parsed.rules)
        try:
            seed = engine.unit(parsed.inputs, _bind_args(parsed, args, terms))
            final = engine.run(parsed.where, seed)
            render = Renderer(cat, terms)
            puller = Puller(conn, cat, visibility(basis, latest), render, engine.charge)
            return _rows(conn, parsed, final, render, puller)
        finally:
            engine.close()


def _rows(conn, query: syntax.Query, final, render, puller) -> Result:
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

    groups: dict = {}
    if aggregated:
        for b in bindings:
            groups.setdefault(group_key(b), []).append(b)

    def value_of(key, b):
        if key in index:
            return cell(b[key])
        for f in query.find:
            if f.column == key:
                if f.kind == "pull":
                    return pulls[(key, b[f.var][1])]
                if f.kind in AGGREGATES:
                    return aggregate(f.kind, [x[f.var] for x in groups[group_key(b)]], key)
                return cell(b[f.var])
        raise QueryError(f"order key {key!r} is unknown", "order by a bound variable or a find column")

    for key, descending in reversed(query.order):
        bindings.sort(key=lambda b: sort_key(value_of(key, b)), reverse=descending)
    rows = []
    if aggregated:
        ordered_groups: dict = {}
        for b in bindings:
            ordered_groups.setdefault(group_key(b), []).append(b)
        if not group_vars and not ordered_groups:
            ordered_groups[()] = []
        for members in ordered_groups.values():
            row = []
            for f in query.find:
                if f.kind == "var":
                    row.append(cell(members[0][f.var]))
                else:
                    row.append(aggregate(f.kind, [m[f.var] for m in members], f.column))
            rows.append(row)
    else:
        for b in bindings:
            rows.append([pulls[(f.column, b[f.var][1])] if f.kind == "pull" else cell(b[f.var])
                         for f in query.find])
    seen, unique = set(), []
    for row in rows:
        text = dumps(row)
        if text not in seen:
            seen.add(text)
            unique.append(row)
    end = None if query.limit is None else query.offset + query.limit
    return Result(columns, unique[query.offset:end])


def explain(conn, basis: int, query, args=None, *, budget: int = DEFAULT_BUDGET) -> dict:
    """The plan of ``query`` without reading facts (spec 12 §9)."""
    parsed = syntax.parse(query, strict=False)
    if parsed.inputs:
        if args is not None and type(args) is not dict:
            raise QueryError("args must be an object keyed by the in variables", 'pass {"?min": 34}')
        for var in parsed.inputs:
            if var not in (args or {}):
                raise QueryError(f"in variable {var} has no entry in args", f'pass args {{"{var}": value}}')
    clauses, warnings = planner.explain_steps(planner.plan(parsed.where, parsed.inputs))
    if parsed.source == "history":
        warnings.append("history source evaluates assertion and retraction datoms within the selected basis")
    return {"basis_tx": basis, "clauses": clauses, "source": parsed.source, "warnings": warnings,
            "work_limit": budget}
