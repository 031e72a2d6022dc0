"""The write session: what every write on one open database needs besides its request.

One object instead of four loose parameters: the connection, the clock and the event-UUID
source (both injectable, ``FGRAPH_CLOCK`` and ``FGRAPH_EVENT_SEED``, for deterministic
tests), and the two caches kept across the transactions of that connection. ``transact``,
``apply`` and ``excise`` take a session; the façade (``fgraph.db.Db``) owns one per
connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import apsw

from fgraph.core.catalog import Catalog, IdentityCache
from fgraph.core.overlay import BufferedRows, Overlay, OverlayCatalog
from fgraph.core.rows import Rows
from fgraph.core.schema_cache import SchemaCache


@dataclass(frozen=True)
class WriteSession:
    """The connection, clock, event factory and caches one database's writes share."""

    conn: apsw.Connection
    clock: Callable[[], int]
    event_factory: Callable[[int], str]
    schema_cache: SchemaCache = field(default_factory=SchemaCache)
    identity_cache: IdentityCache = field(default_factory=IdentityCache)
    overlay: Overlay | None = None     # a bulk apply's pending rows (``fgraph.core.overlay``)

    def catalog(self) -> Catalog:
        """The catalog a write plans against: SQLite, or a bulk apply's overlay over it."""
        if self.overlay is not None:
            return OverlayCatalog(self.conn, self.overlay, self.identity_cache)
        return Catalog(self.conn, cache=self.identity_cache)

    def rows(self) -> Rows:
        """The writer a commit writes through."""
        return BufferedRows(self.overlay) if self.overlay is not None else Rows(self.conn)

    def buffered(self) -> "WriteSession":
        """This session writing into a new overlay (inside an open write transaction)."""
        return replace(self, overlay=Overlay(self.conn, self.identity_cache))

    def forget_cached_state(self) -> None:
        """Drop what the caches learned; after a rollback they may describe rows that never were."""
        self.schema_cache.clear()
        self.identity_cache.clear()
