"""``q`` and ``explain`` at a basis (spec 12 §1, §6, §9–§11): parse, bind ``args``, evaluate
``where`` in SQLite, then order, aggregate, render, deduplicate and page the result.

Runs in one read transaction. The intermediate relations are TEMP tables: on a handle opened
read-only (``SQLITE_OPEN_READONLY``) the main database stays unwritable by its open flags, so
``query_only`` is lifted for the TEMP schema only while a query runs.
"""

from __future__ import annotations

from fgraph.core.asof import visible_at
from fgraph.core.catalog import Catalog
from fgraph.core.connection import temp_schema_writable
from fgraph.core.errors import QueryError
from fgraph.core.limits import DEFAULT_QUERY_BUDGET
from fgraph.core.txn import read_transaction
from fgraph.query.datalog import planner
from fgraph.query.datalog import predicates
from fgraph.query.datalog import syntax
from fgraph.query.datalog.engine import Engine
from fgraph.query.datalog.pull import Puller
from fgraph.query.datalog.results import Renderer, Result
from fgraph.query.datalog.shaping import shape

__all__ = ["DEFAULT_BUDGET", "Result", "ask", "explain"]
from fgraph.query.datalog.terms import NO_MATCH, Terms

DEFAULT_BUDGET = DEFAULT_QUERY_BUDGET


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
        if found is NO_MATCH:
            raise QueryError(f"arg {var} = {raw!r} names no entity", "bind an existing entity or a scalar")
        row += list(found)
    return row


def ask(conn, basis: int, query=None, args=None, *, budget: int = DEFAULT_BUDGET, **clauses) -> Result:
    """``q``: the rows of ``query`` at ``basis``."""
    query, args = _split(query, args, clauses)
    parsed = syntax.parse(query, strict=True)
    with read_transaction(conn), temp_schema_writable(conn):
        cat = Catalog(conn, basis)
        latest = Catalog(conn).latest_tx()
        terms = Terms(conn, cat, visible_at(basis, latest))
        engine = Engine(conn, terms, basis, latest, parsed.source, budget, parsed.rules)
        try:
            seed = engine.unit(parsed.inputs, _bind_args(parsed, args, terms))
            for definitions in parsed.rules.values():
                for rule in definitions:
                    predicates.check_refs(terms, rule.body)
            final = engine.run(parsed.where, seed)
            render = Renderer(cat, terms)
            puller = Puller(conn, cat, visible_at(basis, latest), render, engine.charge)
            return shape(conn, parsed, final, render, puller)
        finally:
            engine.close()


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
    return {"basis_tx": basis, "source": parsed.source, "work_limit": budget, "clauses": clauses,
            "warnings": warnings}
