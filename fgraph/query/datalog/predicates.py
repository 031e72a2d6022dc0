"""Predicates (spec 12 §4.2): ``=``/``!=`` by type and value, orderings within one family,
``contains``/``starts-with`` on text. Evaluated inside SQLite by one registered function,
``fgraph_q_test(op, left tag, left value, right tag, right value)``, over stored forms; long
text and bytes are read from their blobs only when compared.
"""

from __future__ import annotations

import apsw

from fgraph.core.errors import QueryError
from fgraph.core.values import (TAG_BOOL, TAG_BYTES, TAG_FLOAT, TAG_INSTANT, TAG_INT, TAG_JSON, TAG_LONG_BYTES,
                                TAG_LONG_TEXT, TAG_REF, TAG_TEXT, TAG_VECTOR)
from fgraph.query.datalog.syntax import Or, Predicate
from fgraph.query.datalog.terms import NO_MATCH

NUMBER = "number"
FAMILIES = {TAG_INT: NUMBER, TAG_FLOAT: NUMBER, TAG_TEXT: "text", TAG_LONG_TEXT: "text", TAG_BOOL: "bool",
            TAG_INSTANT: "instant", TAG_REF: "ref", TAG_BYTES: "bytes", TAG_LONG_BYTES: "bytes",
            TAG_JSON: "json", TAG_VECTOR: "vector"}
ORDERED = frozenset({NUMBER, "text", "bool", "instant", "ref", "bytes", "json"})


def constant(terms, raw, where: str) -> tuple:
    """A predicate operand constant as (tag, stored); ``"_"`` is the text ``_`` here.

    A ref to a name, id or eid that names nothing is a QueryError (as in the published
    runtime); a lookup that finds nothing equals nothing (id 0 is never allocated).
    """
    found = terms.value(raw, where)
    if found is NO_MATCH:
        if type(raw) is dict and type(raw.get("ref")) is list:
            return (TAG_REF, 0)
        raise QueryError(f"{where}: constant {raw!r} names no entity", "compare with an existing entity")
    return found


def check_refs(terms, clauses) -> None:
    """Resolve the entity refs of predicates before evaluating, as the published runtime does for
    every rule body (called or not); ``where`` resolves its own only when bindings reach them."""
    for clause in clauses:
        if isinstance(clause, Predicate):
            for operand in (clause.left, clause.right):
                selector = operand.get("ref") if type(operand) is dict and len(operand) == 1 else None
                if type(selector) in (str, int) or (type(selector) is dict and set(selector) == {"eid"}):
                    constant(terms, operand, f"predicate {clause.ordinal}")
        elif isinstance(clause, Or):
            for branch in clause.branches:
                check_refs(terms, branch)


class _Test:
    """The SQL function body: compares two stored (tag, value) operands."""

    def __init__(self, terms):
        self.terms = terms

    def payload(self, tag, stored):
        """The comparable form: text as str, bytes as bytes, others as stored."""
        if tag in (TAG_LONG_TEXT, TAG_LONG_BYTES, TAG_VECTOR):
            return self.terms.blob(stored)
        return stored

    def __call__(self, op, lt, lv, rt, rv) -> int:
        lf, rf = FAMILIES.get(lt), FAMILIES.get(rt)
        if op in ("=", "!="):
            same = lf == rf and self.payload(lt, lv) == self.payload(rt, rv)
            if lf == NUMBER and rf == NUMBER:
                same = lv == rv  # Python compares int and float exactly
            return int(same if op == "=" else not same)
        if op in ("contains", "starts-with"):
            # json is stored as its canonical text, and the published runtime searches that text
            lf, rf = ("text" if f == "json" else f for f in (lf, rf))
            if lf != "text" or rf != "text":
                raise QueryError(f"predicate {op!r} needs text operands", "compare text values")
            left, right = self.payload(lt, lv), self.payload(rt, rv)
            return int(right in left if op == "contains" else left.startswith(right))
        if lf != rf or lf not in ORDERED:
            raise QueryError(f"predicate {op!r} cannot order unlike types; compare values of the same type",
                             "compare numbers with numbers, text with text, instants with instants")
        left, right = self.payload(lt, lv), self.payload(rt, rv)
        if lf == "text" and isinstance(left, str) and isinstance(right, str):
            left, right = left.encode("utf-8", "surrogatepass"), right.encode("utf-8", "surrogatepass")
        if op == "<":
            return int(left < right)
        if op == "<=":
            return int(left <= right)
        if op == ">":
            return int(left > right)
        return int(left >= right)


def register(conn: apsw.Connection, terms) -> None:
    try:
        conn.create_scalar_function("fgraph_q_test", _Test(terms), 5, deterministic=False)
    except apsw.BusyError:  # statements of this connection are running: keep the registered function
        pass
