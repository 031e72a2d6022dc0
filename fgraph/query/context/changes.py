"""Recent changes rendered for a prompt (``Db.context``, ``fgraph context``, the MCP ``context``
tool and ``fgraph://context`` resource): the newest changes first, grouped per transaction with
who (``by``), from where (``source``), when and the transaction's ``meta``, within a limit of
items and a character budget.

    ## tx 74 at 2026-01-01T00:00:03.000000Z by mcp:claude from conv:1 meta {"ticket":7}
    - asserted ada person/born = 1816
    - retracted ada person/born = 1815
    … 12 older changes left out (transactions 65-73); get them with: fgraph tail --since 64

An item is one fact asserted or retracted by a transaction (its own receipt facts are the
header, not items). The output is cut between items, never inside one, so it never exceeds the
budget; when anything is left out, the last line says how much and how to get it, in the words
of the face that asked (``more_hint``: a CLI command, an MCP tool call or an MCP resource URI). Reads one
transaction at a time from the newest down (a cursor, not a list), so memory follows the
budget, not the history. The same basis gives the same bytes.

What is left out is counted up to ``context_shape.COUNT_CAP`` items (one more than the largest limit), so the
cost of a call follows the cap, not the history (decision C3 in docs/cli.md): past it the last
line says "N or more" and the result carries ``left_out_at_least: true``.
"""

from __future__ import annotations

from fgraph.core.canonical import dumps
from fgraph.core.limits import GENESIS_TX
from fgraph.core.txn import read_transaction
from fgraph.core.values import format_instant
from fgraph.query.context import entities as context_entities
from fgraph.query.context import shape as context_shape
from fgraph.query.context.timing import window as window  # Db.context reads the window through this module
from fgraph.query.context.shape import (DEFAULT_BUDGET, DEFAULT_LIMIT, ELLIPSIS, MAX_BUDGET, MAX_LIMIT, MORE_KEY,
                                        at_least, budget_for, call, check, how_many, summary)

_COLUMNS = "id, e, a, v, t, tx, rx"


def context(reader, since=None, budget: int = DEFAULT_BUDGET, *, limit: int = DEFAULT_LIMIT, entity=None,
            format: str = "markdown", by: str = "change", type=None, more_hint: str = "cli",
            window: int | None = None) -> dict:
    """The changes after ``since`` (a transaction, already resolved by the caller) as
    ``{basis_tx, since, items, left_out, truncated, text | transactions[, more]}``; ``by="entity"``
    renders the changed entities instead (``fgraph.query.context.entities``). ``more_hint`` names
    the face whose words the last line uses: ``cli``, ``tool`` (an MCP call) or ``resource`` (a URI).
    ``window`` (``context_timing.window`` of the ``since`` given) draws a time window over the
    records' own times in the entity view; the change view keeps "after that transaction"."""
    check(budget, limit, format, by, type, more_hint)
    if by == "entity":
        return context_entities.context(reader, since, budget, limit=limit, entity=entity, format=format, type=type,
                                        more_hint=more_hint, window=window)
    with read_transaction(reader.conn):
        low = GENESIS_TX if since is None else reader.resolve_time(since, absolute=True)
        subject = None if entity is None else reader.resolve(entity)
        total = _count(reader.conn, low, reader.basis, subject)

        def rest(needed: int | None = None) -> str:
            """The call for the whole window; without ``needed`` its longest form."""
            n, b = (MAX_LIMIT, MAX_BUDGET) if needed is None else (min(total, MAX_LIMIT), needed)
            return _rest(more_hint, low, n, b, entity)

        if format == "json":
            return _as_json(reader, low, subject, total, budget, limit, rest)
        return _as_markdown(reader, low, subject, total, budget, limit, rest)


def _rest(hint: str, low: int, n: int, b: int, entity) -> str:
    """How to get every change after ``low``, in the words of the face that asked."""
    if hint == "cli":
        return f"fgraph tail --since {low}"
    if hint == "resource":
        return f"fgraph://changes?since={low}"
    return call("context", since=low, limit=n, budget=b, entity=entity)


# ----------------------------------------------------------------- reading

def _count(conn, low: int, high: int, subject) -> int:
    """Items in (low, high]: facts asserted (receipts excluded) plus facts retracted there,
    counted up to the cap (a total at the cap means at least that many)."""
    cap = context_shape.COUNT_CAP
    only = "" if subject is None else " AND e = ?"
    extra = () if subject is None else (subject,)
    asserted = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM fgraph_facts WHERE tx > ? AND tx <= ? "
                            f"AND e != tx{only} LIMIT ?)", (low, high) + extra + (cap,)).fetchone()[0]
    retracted = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM fgraph_facts WHERE rx > ? AND rx <= ?{only} "
                             f"LIMIT ?)", (low, high) + extra + (cap - asserted,)).fetchone()[0]
    return asserted + retracted


def _transactions(conn, low: int, high: int, subject):
    """Transactions in (low, high], newest first; for one entity only those that touched it."""
    if subject is None:
        return conn.execute("SELECT tx FROM fgraph_events WHERE tx > ? AND tx <= ? ORDER BY tx DESC", (low, high))
    return conn.execute(
        "SELECT tx FROM fgraph_facts WHERE e = ? AND tx > ? AND tx <= ? AND e != tx "
        "UNION SELECT rx FROM fgraph_facts WHERE e = ? AND rx > ? AND rx <= ? ORDER BY 1 DESC",
        (subject, low, high, subject, low, high))


def _changes(reader, tx: int, subject):
    """``(op, fact)`` of one transaction in planning order: its assertions, then its retractions."""
    only = "" if subject is None else " AND e = ?"
    extra = () if subject is None else (subject,)
    for row in reader.conn.execute(f"SELECT {_COLUMNS} FROM fgraph_facts WHERE tx = ? AND e != tx{only} ORDER BY id",
                                   (tx,) + extra):
        yield "asserted", reader.fact(*row)
    for row in reader.conn.execute(f"SELECT {_COLUMNS} FROM fgraph_facts WHERE rx = ?{only} ORDER BY id",
                                   (tx,) + extra):
        yield "retracted", reader.fact(*row)


def _walk(reader, low: int, subject):
    """``(tx, receipt, op, fact)`` for every item after ``low``, newest transaction first."""
    for (tx,) in _transactions(reader.conn, low, reader.basis, subject):
        receipt = None
        for op, fact in _changes(reader, tx, subject):
            if receipt is None:
                receipt = reader.receipt(tx)
            yield tx, receipt, op, fact


def _footer(left_out: int, total: int, rest: str, oldest: int, newest: int) -> str:
    window = f" (transactions {oldest}-{newest})" if oldest != newest else f" (transaction {oldest})"
    plural = "s" if left_out != 1 or at_least(total) else ""
    return f"{ELLIPSIS} {how_many(left_out, total)} older change{plural} left out{window}; get them with: {rest}"


def _reserve(total: int, rest: str, basis: int, budget: int) -> int:
    """Room kept for the footer: its longest possible form, or a bare ellipsis when even that is too long."""
    longest = len(_footer(max(total, 2), total, rest, basis, basis + 1)) + 1
    return longest if longest <= budget // 2 else len(ELLIPSIS) + 1


def _more(total: int, shown: int, rest: str, oldest: int | None, newest: int | None, room: int) -> str:
    text = _footer(total - shown, total, rest, oldest, newest) if oldest is not None else ELLIPSIS
    return text if len(text) < room else ELLIPSIS


# ----------------------------------------------------------------- rendering

def _header(tx: int, receipt: dict) -> str:
    head = f"## tx {tx} at {format_instant(receipt['at'])}"
    if "imported_at" in receipt:
        head += f" (originally {format_instant(receipt['imported_at'])})"
    if "by" in receipt:
        head += f" by {receipt['by']}"
    if "source" in receipt:
        head += f" from {receipt['source']}"
    if "meta" in receipt:  # as ``fgraph tx`` shows it (issue 31); JSON null is a stored value
        head += f" meta {dumps(receipt['meta'])}"
    return head


def _item(op: str, fact: dict) -> str:
    value = fact["v"]
    shown = value if isinstance(value, str) else dumps(value)
    entity = fact["e"] if isinstance(fact["e"], str) else dumps(fact["e"])
    return f"- {op} {entity} {fact['a']} = {shown}"


def _window(reader, low, total, budget, limit, subject, size_of, start, rest, overhead=0):
    """Choose items while they fit; ``size_of`` prices an item (with its group's header when it opens one)."""
    reserve = _reserve(total, rest(), reader.basis, budget) + overhead
    room = budget - reserve
    used, chosen, last_tx, oldest_left, needed = start, [], None, None, None
    walk = _walk(reader, low, subject)
    for tx, receipt, op, fact in walk:
        cost = size_of(tx, receipt, op, fact, opens=tx != last_tx)
        if len(chosen) >= limit or used + cost > (budget if len(chosen) + 1 == total else room):
            oldest_left = tx
            needed = budget_for(used, _costs(walk, size_of, cost, tx), len(chosen), min(total, MAX_LIMIT), reserve)
            break
        used += cost
        chosen.append((tx, receipt, op, fact))
        last_tx = tx
    return chosen, oldest_left, needed


def _costs(walk, size_of, first: int, last_tx: int):
    """The price of the item that did not fit, then of each one after it (for the call that shows them)."""
    yield first
    for tx, receipt, op, fact in walk:
        yield size_of(tx, receipt, op, fact, opens=tx != last_tx)
        last_tx = tx


def _as_markdown(reader, low, subject, total, budget, limit, rest) -> dict:
    def size_of(tx, receipt, op, fact, opens):
        return len(_item(op, fact)) + 1 + (len(_header(tx, receipt)) + 1 if opens else 0)

    chosen, cut_at, needed = _window(reader, low, total, budget, limit, subject, size_of, 0, rest)
    lines, last_tx = [], None
    for tx, receipt, op, fact in chosen:
        if tx != last_tx:
            lines.append(_header(tx, receipt))
            last_tx = tx
        lines.append(_item(op, fact))
    out = summary(reader.basis, low, total, len(chosen))
    if out["truncated"]:
        used = sum(len(line) + 1 for line in lines)
        out["more"] = _more(total, len(chosen), rest(needed),
                            _oldest_left(reader, low, subject, cut_at), cut_at, budget - used)
        lines.append(out["more"])
    out["text"] = "\n".join(lines)
    return out


def _as_json(reader, low, subject, total, budget, limit, rest) -> dict:
    def group(tx, receipt):
        head = {key: value for key, value in (("tx", tx), ("at", format_instant(receipt["at"])),
                                             ("by", receipt.get("by")), ("source", receipt.get("source")))
                if value is not None}
        return dict(head, meta=receipt["meta"]) if "meta" in receipt else head

    def entry(op, fact):
        return {"op": op, "e": fact["e"], "a": fact["a"], "v": fact["v"]}

    def size_of(tx, receipt, op, fact, opens):
        item = len(dumps(entry(op, fact))) + 1  # with its comma
        return item + (len(dumps(dict(group(tx, receipt), changes=[]))) + 1 if opens else 0)

    skeleton = dict(summary(reader.basis, low, total, 0), items=total, truncated=False,
                    transactions=[])  # the longest form of every number and flag
    chosen, cut_at, needed = _window(reader, low, total, budget, limit, subject, size_of, len(dumps(skeleton)), rest,
                             overhead=len(MORE_KEY))
    groups, last_tx = [], None
    for tx, receipt, op, fact in chosen:
        if tx != last_tx:
            groups.append(dict(group(tx, receipt), changes=[]))
            last_tx = tx
        groups[-1]["changes"].append(entry(op, fact))
    out = dict(summary(reader.basis, low, total, len(chosen)), transactions=groups)
    if out["truncated"]:
        room = budget - len(dumps(out)) - len(MORE_KEY)
        out["more"] = _more(total, len(chosen), rest(needed),
                            _oldest_left(reader, low, subject, cut_at), cut_at, room)
    return out


def _oldest_left(reader, low: int, subject, cut_at: int | None) -> int | None:
    """The oldest transaction holding an item left out (items run newest first, so: the oldest after ``low``)."""
    if cut_at is None:
        return None
    only = "" if subject is None else " AND e = ?"
    extra = () if subject is None else (subject,)
    row = reader.conn.execute(
        f"SELECT min(t) FROM (SELECT min(tx) AS t FROM fgraph_facts WHERE tx > ? AND tx <= ? AND e != tx{only} "
        f"UNION ALL SELECT min(rx) FROM fgraph_facts WHERE rx > ? AND rx <= ?{only})",
        (low, cut_at) + extra + (low, cut_at) + extra).fetchone()
    return row[0]
