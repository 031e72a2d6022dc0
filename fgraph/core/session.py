"""The write session: what every write on one open database needs besides its request.

One object instead of four loose parameters: the connection, the clock and the event-UUID
source (both injectable, ``FGRAPH_CLOCK`` and ``FGRAPH_EVENT_SEED``, for deterministic
tests), and the two caches kept across the transactions of that connection. ``transact``,
``apply`` and ``excise`` take a session; the façade (``fgraph.db.Db``) owns one per
connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from fgraph.core.catalog import IdentityCache
from fgraph.core.schema_cache import SchemaCache


@dataclass(frozen=True)
class WriteSession:
    """The connection, clock, event factory and caches one database's writes share."""

    conn: object
    clock: Callable[[], int]
    event_factory: Callable[[int], str]
    schema_cache: SchemaCache = field(default_factory=SchemaCache)
    identity_cache: IdentityCache = field(default_factory=IdentityCache)

    def forget_cached_state(self) -> None:
        """Drop what the caches learned; after a rollback they may describe rows that never were."""
        self.schema_cache.clear()
        self.identity_cache.clear()
