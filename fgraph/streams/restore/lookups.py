"""What the fact records of a restore look up again and again, answered from bounded memory.

Every fact names its entity, attribute, asserting event and perhaps a retracting event; a
restored row never changes inside the restore, so a remembered answer is as good as a query.
Facts come in fact-id order, which is the order of their asserting transactions, so when an
asserting event is not known the next ``AHEAD`` events are read with it in one query: most
facts then need no query at all (issue 34). Each cache starts over past ``LIMIT`` entries, so
memory stays flat however long the stream is. ``size_temp_cache`` bounds the temporary
table of receipt times the same way.

A retracting event is usually some thousands of transactions after the asserting one, too far
for that read-ahead and for a cache that starts over. ``Window`` keeps the events of the
``WINDOW`` transactions from the facts' asserting transaction on, read in transaction order a
chunk at a time and dropped once the facts pass them; it has its own memory, so it never
empties the caches above (reading ahead into them after a retracting miss made restore 3× slower).
"""

from __future__ import annotations

from collections import deque

import apsw

from fgraph.core.identity import gid_to_uuid

LIMIT = 8192   # entries of each cache
AHEAD = 512    # events read with an asserting event that was not known
WINDOW = 16384  # events kept from the facts' asserting transaction on, for retracting events
CHUNK = 1024    # events the window reads per query

_NEXT_EVENTS = ("SELECT i.gid, i.id FROM fgraph_events ev JOIN fgraph_ids i ON i.id = ev.tx WHERE ev.tx > ? "
                "ORDER BY ev.tx LIMIT ?")
_TRANSACTION = "SELECT ev.tx FROM fgraph_ids i JOIN fgraph_events ev ON ev.tx = i.id WHERE i.gid = ?"


def selector_key(sel):
    """The cache key of an entity selector (a name, or ``("eid", uuid)``), None when it has none."""
    if type(sel) is str:
        return sel
    if type(sel) is dict and len(sel) == 1 and type(sel.get("eid")) is str:
        return ("eid", sel["eid"])
    return None


class Lookups:
    """Event UUID → transaction id, and selector or ``("attribute", name)`` → identity id."""

    def __init__(self, conn):
        self.conn = conn
        self.events: dict[str, int] = {}
        self.ids: dict = {}

    def event(self, event) -> int | None:
        """The transaction of a known event (only ever one that was proved a transaction)."""
        return self.events.get(event) if type(event) is str else None

    def identity(self, key) -> int | None:
        if key is None:
            return None
        found = self.ids.get(key)
        if found is None and type(key) is tuple and key[0] == "eid":
            found = self.events.get(key[1])  # a transaction's own facts name it by its event
        return found

    def transaction_of(self, gid: bytes) -> int | None:
        """The transaction whose event has this gid, in one query (None: not a transaction)."""
        row = self.conn.execute(_TRANSACTION, (gid,)).fetchone()
        return row[0] if row is not None else None

    def remember(self, key, ident: int) -> None:
        if key is not None:
            _put(self.ids, key, ident)

    def remember_event(self, event: str, tx: int, *, ahead: bool) -> None:
        """A proved (event, transaction); with ``ahead`` the transactions after it are read too."""
        if ahead:
            if len(self.events) + AHEAD >= LIMIT:
                self.events.clear()
            for gid, later in self.conn.execute(_NEXT_EVENTS, (tx, AHEAD)):
                self.events[gid_to_uuid(gid)] = later
        _put(self.events, event, tx)


class Window:
    """Event UUID → transaction for the transactions from the facts' asserting one on, at most
    ``WINDOW`` of them; only transactions (events joined with their identities) are held. Read
    only once every receipt's rows are written: it reads the events table to its end."""

    def __init__(self, conn):
        self.conn = conn
        self.events: dict[str, int] = {}
        self.order: deque = deque()   # (transaction, UUID) in transaction order
        self.tx: int | None = None    # the asserting transaction it was last moved to
        self.last: int | None = None  # the last transaction read
        self.ended = False

    def at(self, tx: int) -> dict:
        """The events of the transactions from ``tx`` on (up to ``WINDOW``), by UUID."""
        if tx != self.tx:
            self.tx = tx
            self._move(tx)
        return self.events

    def _move(self, tx: int) -> None:
        events, order = self.events, self.order
        while order and order[0][0] < tx:
            del events[order.popleft()[1]]
        if self.last is None or self.last < tx:   # jumped past what was read: read on from tx
            self.last, self.ended = tx - 1, False
        while not self.ended and len(order) < WINDOW:
            rows = self.conn.execute(_NEXT_EVENTS, (self.last, CHUNK)).fetchall()
            for gid, later in rows:
                event = gid_to_uuid(gid)
                events[event] = later
                order.append((later, event))
            if rows:
                self.last = rows[-1][1]
            self.ended = len(rows) < CHUNK


def _put(cache: dict, key, value) -> None:
    if len(cache) >= LIMIT:
        cache.clear()
    cache[key] = value


def size_temp_cache(conn, kib: int) -> int | None:
    """Set the temporary database's cache size; the previous one, or None when SQLite could not
    (an I/O fault, a closed handle): it only sizes a cache, and the restore's own outcome (or
    its error) is what the caller must see, never a failure to tune memory."""
    try:
        previous = conn.execute("PRAGMA temp.cache_size").fetchone()[0]
        conn.execute(f"PRAGMA temp.cache_size = {int(kib)}")
        return int(previous)
    except apsw.Error:
        return None
