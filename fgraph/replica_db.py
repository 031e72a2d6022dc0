"""The ``Db`` of a ``litestream:URL`` read replica: every read goes through a ``Follower``
(fgraph.core.replica_follow), so it has a deadline, an error of the litestream-vfs extension is
retried on a fresh connection, and a connection that stopped following is replaced
(docs/replication.md, §Following, compactions and errors; issue 48 item 5).

The reads are ``Db``'s own methods, run whole inside the follower: a retry re-runs the method on a
fresh connection, never half of it. The streaming methods (``iter_events``, ``follow``, ``snapshot``
…) are not bounded this way: they yield as they read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fgraph.core import connection
from fgraph.core.replica_follow import Follower
from fgraph.db import Db

if TYPE_CHECKING:
    from fgraph.core.identity import Clock, EventFactory
    from fgraph.core.types import Connection, JSONObject, TimeArg

# Db's methods that read and return a finished answer: each runs whole inside the follower. A test
# (tests/core/test_replica_follow.py) checks that every public method of Db is in GUARDED or UNGUARDED.
GUARDED = ("excision_record", "redacted_remainder", "holds_event", "stand_ins", "event_records", "info", "stats",
           "entity", "q", "explain", "datoms", "search", "context", "schema", "attributes", "schema_manifest",
           "check_schema_manifest", "validate", "pull", "incoming", "about", "history", "why", "diff", "changes",
           "receipt", "resolve_time", "resolve", "latest_tx", "doctor", "diagnose", "logical_digest", "content_digest")
# Writes (refused on a replica before they read), the clock, lifecycle, and streams that yield as they read.
UNGUARDED = ("transact", "add", "undo", "retract", "declare", "declare_shape", "apply_schema_manifest", "speculate",
             "excise", "carry_out_excision", "apply", "apply_summary", "restore", "backup", "close", "at", "now",
             "iter_events", "iter_tx_events", "follow_lines", "follow", "iter_snapshot", "snapshot",
             "connection", "query_budget", "path", "read_only", "basis")


def connect_replica(path: str, *, clock: Clock, event_factory: EventFactory, query_budget: int) -> ReplicaDb:
    """Open ``litestream:URL`` read-only behind a follower (the first open is bounded like every read)."""
    follower = Follower(path, lambda name: connection.open_replica(name, True))
    return ReplicaDb(follower, path, clock=clock, event_factory=event_factory, query_budget=query_budget)


class ReplicaDb(Db):
    """A ``Db`` whose connection is the follower's current one."""

    def __init__(self, follower: Follower, path: str, *, clock: Clock, event_factory: EventFactory,
                 basis: int | None = None, query_budget: int) -> None:
        self.follower = follower
        super().__init__(follower.connection, path, clock=clock, read_only=True, event_factory=event_factory,
                         basis=basis, query_budget=query_budget)

    @property  # Db assigns it; here it is always the follower's current one
    def connection(self) -> Connection:
        return self.follower.connection

    @connection.setter
    def connection(self, value: Connection | None) -> None:
        pass  # Db.__init__ and Db.close assign it; the follower owns the connection

    def close(self) -> None:
        if self._owns_connection:
            self.follower.close()

    def at(self, value: TimeArg) -> ReplicaDb:
        basis = self.resolve_time(value)
        if self.basis is not None:
            basis = min(basis, self.basis)
        return ReplicaDb(self.follower, self.path, clock=self._session.clock, event_factory=self._session.event_factory,
                         basis=basis, query_budget=self.query_budget)

    def replica_position(self) -> JSONObject:
        """Litestream's position of the current connection and what the follower did (reads, reopens …)."""
        return self.follower.position()


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def read(self: ReplicaDb, *args: Any, **kwargs: Any) -> Any:
        return self.follower.call(lambda: method(self, *args, **kwargs))
    return read


for _name in GUARDED:
    if hasattr(Db, _name):  # a name listed ahead of the method (another change adds it) is skipped until then
        setattr(ReplicaDb, _name, _guarded(getattr(Db, _name)))
