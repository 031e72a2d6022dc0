"""Where a ``since`` or ``at`` value points: one grammar for every command, library call and MCP
tool and resource (issue 49 item 2; docs/cli.md "Times", decision T2 in docs/query.md).

A value is one of:

- an integer (or its decimal text) that is a transaction id of this store: that transaction;
- an event UUID (``tail`` prints it as ``event``): the local transaction that recorded that event,
  written here, imported or applied alike (a redacted event's stub keeps it);
- an RFC 3339 instant, or a duration before now (``90m``, ``24h``, ``1h30m``): the last transaction
  at or before that instant; before the first transaction it is the beginning, transaction 64
  (``since``: the whole history; ``at``: the empty genesis view);
- any other integer: for ``since`` a position among the transaction ids, meaning "after the last
  transaction at or below it" (``--since 65`` is ``--since 64``, as ``tail --since`` has always read
  it; the published runtime reads it as microseconds with ``--follow``); for ``at`` the published
  reading, an instant in microseconds (spec 09 §5: ``at(65)`` is ``NotFound``).

Every refusal says which transaction ids and times the store holds.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fgraph.core import values
from fgraph.core.catalog import Catalog
from fgraph.core.errors import NotFound, ValueTypeError
from fgraph.core.limits import GENESIS_TX, INSTANT_MAX, INSTANT_MIN, INT64_MAX, INT64_MIN
from fgraph.core.timespec import EVENT_UUID, duration_us, instant_before

if TYPE_CHECKING:
    from fgraph.core.types import JSON

GRAMMAR = "a transaction id, an event UUID, an RFC 3339 time such as 2026-12-06T00:00:00Z or a duration such as 24h"


def holdings(cat: Catalog) -> str:
    """What a refusal tells: the transaction ids and times this store holds."""
    latest = cat.latest_tx()
    count = cat.conn.execute("SELECT count(*) FROM fgraph_events WHERE tx <= ?", (latest,)).fetchone()[0]  # type: ignore[index]
    first, last = cat.tx_at(GENESIS_TX), cat.tx_at(latest)
    first_at = "" if first is None else f" at {values.format_instant(first)}"
    if latest == GENESIS_TX:
        return f"this store holds only its genesis, transaction {GENESIS_TX}{first_at}"
    last_at = "" if last is None else f" at {values.format_instant(last)}"
    return f"this store holds {count} transactions, from {GENESIS_TX}{first_at} to {latest}{last_at}"


def _refuse(cat: Catalog, error: type[Exception], what: str) -> Exception:
    return error(f"{what}; {holdings(cat)}", f"pass {GRAMMAR}")


def resolve(cat: Catalog, value: JSON, *, since: bool = False, now: int | None = None) -> int:
    """The transaction ``value`` names (module docstring); ``since`` picks that option's reading of
    an integer that is no transaction; ``now`` (µs) anchors durations."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueTypeError(f"time {value!r} is not valid", f"pass {GRAMMAR}")
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"[+-]?[0-9]+", text):
            return resolve(cat, int(text), since=since, now=now)
        if EVENT_UUID.fullmatch(text):
            return event_tx(cat, text.lower())
        if duration_us(text) is not None:
            if now is None:
                raise ValueTypeError(f"duration {text!r} needs a clock", "resolve it through Db.resolve_time")
            instant = instant_before(now, text)
            return _at_or_before(cat, instant)
        try:
            instant = values.parse_instant(text)
        except ValueTypeError as exc:
            raise ValueTypeError(f"{value[:60]!r} is not {GRAMMAR}", exc.hint) from None
        return _at_or_before(cat, instant)
    if not INT64_MIN <= value <= INT64_MAX:
        raise _refuse(cat, ValueTypeError, f"time {value} is outside the signed 64-bit range")
    if value >= GENESIS_TX and cat.is_transaction(value):
        return value
    if since:
        if value < GENESIS_TX:   # the published name (its --follow reads 63 as an instant before genesis)
            raise _refuse(cat, NotFound, f"{value} is before the first transaction, {GENESIS_TX}")
        row = cat.conn.execute("SELECT max(tx) FROM fgraph_events WHERE tx <= ?",
                               (min(value, cat.latest_tx()),)).fetchone()
        return row[0] if row and row[0] is not None else GENESIS_TX
    if not INSTANT_MIN <= value <= INSTANT_MAX:
        raise _refuse(cat, ValueTypeError, f"{value} is neither a transaction nor an instant in the domain "
                                           "(µs between years 1 and 9999)")
    tx = cat.tx_for_instant(value)
    if tx is None:   # spec 09 §5: at(65) is NotFound (an integer is the published µs instant here)
        raise _refuse(cat, NotFound, f"{value} is no transaction id, and as µs ({values.format_instant(value)}) "
                                     "it is before the first transaction")
    return tx


def _at_or_before(cat: Catalog, instant: int) -> int:
    """The last transaction at or before ``instant``; before the first one, the beginning."""
    tx = cat.tx_for_instant(instant)
    return GENESIS_TX if tx is None else tx


def event_tx(cat: Catalog, event: str) -> int:
    """The local transaction that recorded ``event`` (its self-receipt's eid is the event UUID)."""
    from fgraph.core.identity import uuid_to_gid
    try:
        gid = uuid_to_gid(event)
    except (ValueTypeError, ValueError):
        raise _refuse(cat, ValueTypeError, f"{event!r} is not a valid UUID") from None
    found = cat.id_by_gid(gid)
    if found is None or not cat.is_transaction(found):
        what = "no event of this store" if found is None else f"entity {found}, not an event"
        raise _refuse(cat, NotFound, f"{event} is {what}")
    return found
