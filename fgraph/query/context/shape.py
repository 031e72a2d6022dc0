"""What both context views share (``fgraph.query.context.changes`` by change, ``fgraph.query.context.entities``
by entity): the bounds of their options, the checks, and the words of the last line."""

from __future__ import annotations

import itertools

from fgraph.core.canonical import dumps
from fgraph.core.checks import strict_int
from fgraph.core.errors import ValueTypeError
from fgraph.core.values import TAG_TEXT
from fgraph.core.limits import (CONTEXT_BUDGET, CONTEXT_COUNT_CAP, CONTEXT_LIMIT, CONTEXT_MAX_BUDGET,
                                CONTEXT_MAX_LIMIT, CONTEXT_MIN_BUDGET)

BOOKKEEPING_SQL = "({n}.name LIKE 'fgraph/%' OR {n}.name LIKE 'db/%' OR {n}.name LIKE '%/id')"  # ids and system
DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET = CONTEXT_BUDGET, CONTEXT_MAX_BUDGET, CONTEXT_MIN_BUDGET
DEFAULT_LIMIT, MAX_LIMIT = CONTEXT_LIMIT, CONTEXT_MAX_LIMIT
FORMATS = ("markdown", "json")
VIEWS = ("change", "entity")
MORE_HINTS = ("cli", "tool", "resource")
ELLIPSIS = "…"
MORE_KEY = ',"more":""'  # the least a "more" key adds: both views keep room for it when they cut
COUNT_CAP = CONTEXT_COUNT_CAP  # read as ``context_shape.COUNT_CAP`` so a test can lower it for both views


def at_least(total: int) -> bool:
    """Whether a window's count stopped at the cap (decision C3), so the true total may be larger."""
    return total >= COUNT_CAP


def how_many(left_out: int, total: int) -> str:
    """The number of the last line: exact, or "N or more" when the count stopped at the cap."""
    return f"{left_out} or more" if at_least(total) else str(left_out)


def summary(basis: int, since: int, total: int, shown: int) -> dict:
    """The figures both formats of both views open with; ``left_out_at_least`` only past the cap."""
    out = {"basis_tx": basis, "since": since, "items": shown, "left_out": total - shown, "truncated": shown < total}
    if at_least(total):
        out["left_out_at_least"] = True
    return out


def check(budget, limit, format, by="change", type=None, more_hint="cli") -> None:
    """Refuse an option no view accepts, saying what to pass instead."""
    strict_int(budget, "context budget {value!r} is invalid", "pass a character budget from {low} through {high}",
               low=MIN_BUDGET, high=MAX_BUDGET)
    strict_int(limit, "context limit {value!r} is invalid", "pass a number of items from {low} through {high}",
               low=1, high=MAX_LIMIT)
    if format not in FORMATS:
        raise ValueTypeError(f"context format {format!r} is unknown", "choose markdown or json")
    if by not in VIEWS:
        raise ValueTypeError(f"context by {by!r} is unknown", "choose change or entity")
    types_of(type)
    if type is not None and by != "entity":
        raise ValueTypeError(f"context type {type!r} filters entities, not changes",
                             "add --by entity (by=\"entity\" over MCP), or leave the type out")
    if more_hint not in MORE_HINTS:
        raise ValueTypeError(f"context more_hint {more_hint!r} is unknown", "choose cli, tool or resource")


def types_of(type) -> tuple[str, ...] | None:
    """The types a ``type`` option keeps: a string (a comma list: ``decision,preference``) or a
    list of them (a repeated ``--type``), each once, in the order given; None keeps every type."""
    if type is None:
        return None
    parts = [type] if isinstance(type, str) else type
    if not isinstance(parts, (list, tuple)) or not parts or not all(isinstance(p, str) for p in parts):
        raise ValueTypeError(f"context type {type!r} is invalid", "pass a type such as decision, or a comma list")
    out = tuple(dict.fromkeys(word.strip() for part in parts for word in part.split(",") if word.strip()))
    if not out:
        raise ValueTypeError(f"context type {type!r} is invalid", "pass a type such as decision, or a comma list")
    return out


def known_types(reader, types) -> None:
    """Refuse a type list none of whose types an entity of the store has, naming the types it has
    (a standing ``--type decision,preference`` still works on a store with no preference yet)."""
    vis = reader.visible
    rows = reader.conn.execute(
        f"SELECT DISTINCT y.v FROM fgraph_facts y JOIN fgraph_ids m ON m.id = y.a WHERE y.t = {TAG_TEXT} "
        f"AND m.name LIKE '%/type' AND NOT {BOOKKEEPING_SQL.format(n='m')} AND {vis('y')} LIMIT 1000").fetchall()
    known = sorted({value.lower() for (value,) in rows if isinstance(value, str)})
    unknown = [word for word in types if word.lower() not in known]
    if len(unknown) == len(types):
        listed = ", ".join(known[:40]) + (", …" if len(known) > 40 else "") if known else "none"
        raise ValueTypeError(f"context type {', '.join(map(repr, unknown))} is unknown in this store; "
                             f"its types: {listed}", "pass one of them, or a comma list (--type decision,preference)")


def budget_for(used: int, later, shown: int, n: int, reserve: int) -> int:
    """The budget that shows the first ``n`` items in one call: the ``used`` characters of the
    ``shown`` ones plus the cost of each next one (``later``, an iterator read only as far as
    needed) and the ``reserve`` a window keeps, rounded up to a thousand, at most the maximum."""
    for cost in itertools.islice(later, max(0, n - shown)):
        used += cost
        if used + reserve > MAX_BUDGET:
            return MAX_BUDGET
    return min(MAX_BUDGET, -(-(used + reserve) // 1000) * 1000)


def call(tool: str, **arguments) -> str:
    """An MCP tool call as an agent writes it: ``context(since=64, limit=6)``; None arguments left out."""
    return f"{tool}(" + ", ".join(f"{key}={dumps(value)}" for key, value in arguments.items()
                                  if value is not None) + ")"
