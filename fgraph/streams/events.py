"""Reading the event log: ``event_records`` (tail) and ``follow`` (tail --follow), spec 04 §3–§4.

Lines are streamed straight from ``fgraph_events`` in tx order with bounded
memory; a redacted payload is rendered as its stub. ``follow`` wakes on SQLite's
own change counter (``PRAGMA data_version``) instead of re-querying tables.
"""

from __future__ import annotations

import time
from typing import Iterator

from fgraph.core.canonical import dumps
from fgraph.core.catalog import Catalog
from fgraph.core.checks import optional_int, strict_int
from fgraph.core.identity import gid_to_uuid
from fgraph.core.limits import GENESIS_TX, INT64_MAX
from fgraph.core.payload import payload_bytes, verified_text

FOLLOW_MIN_INTERVAL = 0.005
FOLLOW_MAX_INTERVAL = 0.05
FOLLOW_HOT = 1.0   # seconds at the shortest interval after the last event
BATCH = 512


def check_since(since) -> int:
    return strict_int(since, "--since {value!r} is outside [{low}, 2^63-1]",
                      "pass a local transaction id ({low} starts after genesis)", low=GENESIS_TX, high=INT64_MAX)


def redacted_stub(cat: Catalog, tx: int, event_hash: bytes) -> str:
    at = cat.imported_at(tx)
    return dumps({"at": at if at is not None else cat.tx_at(tx), "event": gid_to_uuid(cat.gid_of(tx)),
                  "event_hash": event_hash.hex(), "fgraph": "event/1", "redacted": True})


def _rows(conn, since: int, through: int | None):
    """Rows (tx, payload bytes, event_hash) with since < tx <= through, fetched in bounded batches."""
    while True:
        if through is None:
            rows = conn.execute(f"SELECT tx, {payload_bytes()}, event_hash FROM fgraph_events WHERE tx > ? ORDER BY tx "
                                "LIMIT ?", (since, BATCH)).fetchall()
        else:
            rows = conn.execute(f"SELECT tx, {payload_bytes()}, event_hash FROM fgraph_events WHERE tx > ? AND tx <= ? "
                                "ORDER BY tx LIMIT ?", (since, through, BATCH)).fetchall()
        if not rows:
            return
        yield from rows
        since = rows[-1][0]
        if len(rows) < BATCH:
            return


def check_through(through) -> int | None:
    return optional_int(through, "event through {value!r} is invalid", "use a transaction id at least {low}",
                        low=GENESIS_TX, high=INT64_MAX)


def iter_event_lines(conn, since: int = GENESIS_TX, through: int | None = None) -> Iterator[tuple[int, str]]:
    """(tx, canonical line without LF) for every event with since < tx <= through."""
    check_through(through)
    cat = Catalog(conn)
    for tx, data, event_hash in _rows(conn, check_since(since), through):
        if data is None:
            yield tx, redacted_stub(cat, tx, event_hash)
        else:
            yield tx, verified_text(tx, data, event_hash, lambda tx=tx: gid_to_uuid(cat.gid_of(tx)))


def follow_lines(conn, since: int, *, stop=None, longest: float = FOLLOW_MAX_INTERVAL,
                 caught_up=None) -> Iterator[tuple[int, str]]:
    """Events after ``since`` now and as they commit, forever (or until ``stop()`` is true);
    ``caught_up()`` runs each time the lines yielded so far were all there was (``streams.follow``).

    ``data_version`` changes whenever another connection commits, so an idle
    follower costs one cheap pragma per wake-up; the wake-up interval stays at 5 ms
    for ``FOLLOW_HOT`` seconds after the last event (a writer committing every 50 ms
    is seen within 5 ms, not after a backed-off wait), then backs off to ``longest``
    (at most 50 ms) while nothing happens (benchmarks/follow.py).
    """
    longest = max(FOLLOW_MIN_INTERVAL, min(longest, FOLLOW_MAX_INTERVAL))
    interval = FOLLOW_MIN_INTERVAL
    version = None
    active = time.monotonic()
    while stop is None or not stop():
        current = conn.execute("PRAGMA data_version").fetchone()[0]
        if current != version:
            version = current
            emitted = False
            for tx, line in iter_event_lines(conn, since):
                since = tx
                emitted = True
                yield tx, line
            if emitted:
                if caught_up is not None:
                    caught_up()
                interval = FOLLOW_MIN_INTERVAL
                active = time.monotonic()
                continue
        time.sleep(interval)
        if time.monotonic() - active > FOLLOW_HOT:
            interval = min(interval * 2, longest)
