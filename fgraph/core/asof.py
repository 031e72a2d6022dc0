"""The as-of predicate: which facts are visible at a basis transaction (spec 01 §4).

A fact is visible at basis ``b`` when it was asserted at or before ``b`` and not retracted at or
before ``b``. At the latest transaction that is just ``rx IS NULL``, which the live partial
indexes serve. This is the only place that writes the predicate; every reader asks here.
"""

from __future__ import annotations


def visible_at(basis: int, latest: int | None = None, alias: str = "") -> str:
    """SQL for "visible at ``basis``" over ``fgraph_facts`` (``alias`` names the table in a join).

    With ``latest`` given and ``basis >= latest`` the short form ``rx IS NULL`` is used; the
    integers are the caller's own transaction ids, never user text."""
    p = f"{alias}." if alias else ""
    basis = int(basis)
    if latest is not None and basis >= latest:
        return f"{p}rx IS NULL"
    return f"{p}tx <= {basis} AND ({p}rx IS NULL OR {p}rx > {basis})"
