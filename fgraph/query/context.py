"""Recent changes rendered for a prompt (``Db.context``, ``fgraph context``, the MCP ``context``
tool and ``fgraph://context`` resource): the newest transactions first, each with who, where
and when, then its facts, within a character budget.

    tx 74 at 2026-01-01T00:00:03.000000Z by mcp:claude (source conv:1)
      + ada person/born 1816
      - ada person/born 1815

Reads one transaction at a time from the newest down, so memory follows the budget, not the
history. A transaction that does not fit is cut line by line and the text ends with ``…``.
"""

from __future__ import annotations

from fgraph.core.canonical import dumps
from fgraph.core.errors import ValueTypeError
from fgraph.core.limits import GENESIS_TX
from fgraph.core.txn import read_transaction
from fgraph.core.values import format_instant

DEFAULT_BUDGET, MAX_BUDGET = 4000, 100_000
ELLIPSIS = "…"


def context(reader, since=None, budget: int = DEFAULT_BUDGET) -> dict:
    """``{"basis_tx", "since", "transactions", "truncated", "text"}`` for the changes after ``since``."""
    if isinstance(budget, bool) or not isinstance(budget, int) or not 100 <= budget <= MAX_BUDGET:
        raise ValueTypeError(f"context budget {budget!r} is invalid",
                             f"pass a character budget from 100 through {MAX_BUDGET}")
    with read_transaction(reader.conn):
        low = GENESIS_TX if since is None else reader.resolve_time(since, absolute=True)
        lines, shown, truncated = [], 0, False
        txs = [tx for (tx,) in reader.conn.execute(
            "SELECT tx FROM fgraph_events WHERE tx > ? AND tx <= ? ORDER BY tx DESC", (low, reader.basis))]
        used = 0
        for tx in txs:
            block = _render(reader, tx)
            room = budget - used
            size = sum(len(line) + 1 for line in block)
            if size <= room:
                lines += block
                used += size
                shown += 1
                continue
            truncated = True
            for line in block:
                if len(line) + 1 + len(ELLIPSIS) > room:
                    break
                lines.append(line)
                room -= len(line) + 1
            lines.append(ELLIPSIS)
            break
        return {"basis_tx": reader.basis, "since": low, "transactions": shown, "truncated": truncated,
                "text": "\n".join(lines)}


def _render(reader, tx: int) -> list:
    receipt = reader.receipt(tx)
    head = f"tx {tx} at {format_instant(receipt['at'])}"
    if "by" in receipt:
        head += f" by {receipt['by']}"
    if "source" in receipt:
        head += f" (source {receipt['source']})"
    changes = reader.diff(reader.cat.tx_before(tx), tx)
    body = [f"  + {_fact(f)}" for f in changes["asserted"] if f["e"] != tx]
    body += [f"  - {_fact(f)}" for f in changes["retracted"]]
    return [head] + body


def _fact(fact: dict) -> str:
    value = fact["v"]
    shown = value if isinstance(value, str) else dumps(value)
    return f"{fact['e']} {fact['a']} {shown}"
