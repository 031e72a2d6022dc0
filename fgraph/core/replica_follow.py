"""An open ``litestream:URL`` replica that keeps following, or says why it cannot (issue 48 item 5;
docs/replication.md, §Following, compactions and errors).

litestream-vfs 0.5.17 is not reliable on a long-lived connection: at a Litestream compaction a
reader may stop following (its ``litestream_txid()`` and its data stay at an old transaction for
minutes), meet ``SQL logic error`` / ``database disk image is malformed``, or, rarely, answer from
a torn view (a basis whose rows lack a few transactions before it); a fresh open reads
correctly. And a read waits without a bound while the storage does not answer. So every read of
a replica goes through ``Follower.call``:

- **a fresh connection per read** (``REUSE_S`` = 0): each read opens the replica afresh, so no
  view outlives one read; a fresh connection behind what this reader already served (Litestream
  compacting) is tried again, for ``BEHIND_S`` at most, then reported typed;
- **deadline**: a read, its opens, position checks and retries together are given
  ``replica.timeout()`` seconds; each step runs in a helper thread, and at the deadline the read
  ends with ``NotFound`` (a connection stuck inside the extension is abandoned, never closed);
- **errors reopen**: an SQLite error (or a damaged-page ``FormatError``) from the extension is
  retried on a fresh connection, ``RETRIES`` times, then reported typed;
- with ``REUSE_S`` > 0 a connection is reused for that long, and one whose Litestream txid has not
  moved for ``STALL_S`` seconds is compared with a fresh open and replaced when that is ahead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import apsw

from fgraph.core import connection, replica, settings
from fgraph.core.errors import FgraphError, FormatError, NotFound
from fgraph.core.replica import is_replica

__all__ = ["GUARDED", "UNGUARDED", "Follower", "FollowingDb", "following", "is_replica"]

if TYPE_CHECKING:
    from fgraph.core.types import JSONObject

T = TypeVar("T")

REUSE_S = 0.0   # a connection serves reads for this long; 0: a fresh open for every read (see the module doc)
STALL_S = 5.0   # Litestream's txid unchanged this long on a reused connection: compare with a fresh open
RETRIES = 3     # fresh opens tried after an error of the extension before it is reported
BEHIND_S = 5.0  # how long fresh opens behind what was served are tried again before that is reported


class Follower:
    """The one current connection of a replica, replaced when it froze or failed."""

    def __init__(self, path: str, opener: Callable[[str], apsw.Connection]) -> None:
        self.path = path
        self._opener = opener
        self._lock = threading.RLock()
        self._inside = threading.local()
        self._conn: apsw.Connection | None = None
        self._txid: str | None = None
        self._moved = self._opened = time.monotonic()
        self._until: float | None = None  # the deadline of the read under way
        self._high = 0  # the furthest Litestream txid served: a connection never takes the reader back
        self.counts = {"reads": 0, "reopens": 0, "frozen": 0, "behind": 0, "retried": 0, "timeouts": 0}
        self._conn = self._bounded(lambda: opener(path), "open")  # the first open's errors are the opener's
        self._txid = self._bounded(self._read_txid, "read its position")
        self._high = _number(self._txid)

    # -- the connection --------------------------------------------------------
    @property
    def connection(self) -> apsw.Connection:
        if self._conn is None:
            self._replace(*self._fresh())
        assert self._conn is not None
        return self._conn

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            _close_later(conn)

    def position(self) -> JSONObject:
        """Litestream's position of the current connection, and what the follower did so far."""
        where = self.call(lambda: replica.position(self.connection))
        return {**where, "stall_bound_s": STALL_S, **self.counts}

    # -- reads -----------------------------------------------------------------
    def call(self, read: Callable[[], T]) -> T:
        """``read()`` (which uses ``self.connection``) with a deadline, on a view that is not frozen;
        an error of the extension is retried on fresh connections, then reported typed."""
        if getattr(self._inside, "active", False):
            return read()  # a read inside a read: the outer call holds the deadline
        with self._lock:
            self.counts["reads"] += 1
            self._until = time.monotonic() + replica.timeout()  # one deadline for the opens, checks and retries
            try:
                return self._read(read)
            finally:
                self._until = None

    def _read(self, read: Callable[[], T]) -> T:
        self._follow()
        last: BaseException | None = None
        for attempt in range(RETRIES + 1):
            if attempt:
                self.counts["retried"] += 1
                self._replace(*self._fresh())
            try:
                return self._bounded(read, "answer")
            except apsw.Error as exc:
                last = exc
            except (FormatError, UnicodeDecodeError) as exc:  # a damaged page fgraph itself noticed
                last = exc
        raise FormatError(f"the Litestream replica {self.path!r} failed {RETRIES + 1} reads on fresh "
                          f"connections ({_detail(last)})",
                          "the litestream-vfs extension could not serve a consistent view; retry, or "
                          "`litestream restore` the replica and read the restored file") from None

    def _follow(self) -> None:
        """Replace a connection whose Litestream position has not moved for STALL_S seconds by a fresh
        one that is ahead of it (the extension sometimes stops following at a compaction), and one
        whose position went back behind what was already served."""
        if self._conn is None or time.monotonic() - self._opened >= REUSE_S:
            self._replace(*self._fresh())
            return
        txid = self._bounded(self._read_txid, "read its position")
        now = time.monotonic()
        if _number(txid) < self._high:
            self.counts["behind"] += 1
            self._replace(*self._fresh())
            return
        if txid != self._txid:
            self._txid, self._moved = txid, now
            self._high = max(self._high, _number(txid))
            return
        if now - self._moved < STALL_S:
            return
        self.counts["reopens"] += 1
        fresh = self._bounded(lambda: self._opener(self.path), "open")
        fresh_txid = self._bounded(lambda: _txid_of(fresh), "read its position")
        if _number(fresh_txid) > _number(txid):
            self.counts["frozen"] += 1
            self._replace(fresh, fresh_txid)
        else:
            _close_later(fresh)
            self._moved = now

    def _fresh(self) -> tuple[apsw.Connection, str | None]:
        """A fresh connection that is not behind what this follower has served: while Litestream compacts,
        a fresh open can stand at an older transaction for a moment; it is tried again (bounded)."""
        deadline = time.monotonic() + min(replica.timeout(), BEHIND_S)
        while True:
            self.counts["reopens"] += 1
            conn = self._bounded(lambda: self._opener(self.path), "open")
            where = self._bounded(lambda: _txid_of(conn), "read its position")
            txid = _number(where)
            if txid >= self._high:
                return conn, where
            self.counts["behind"] += 1
            _close_later(conn)
            if time.monotonic() >= deadline:
                raise NotFound(f"the Litestream replica {self.path!r} stands at transaction {txid:016x}, behind "
                               f"{self._high:016x} which this reader already served",
                               "Litestream is compacting or the storage lost files; retry in a few seconds, or "
                               "open the replica afresh")
            time.sleep(0.1)

    def _replace(self, conn: apsw.Connection, txid: str | None) -> None:
        old, self._conn = self._conn, conn
        self._txid, self._moved = txid, time.monotonic()
        self._opened = self._moved
        self._high = max(self._high, _number(self._txid))
        if old is not None:
            _close_later(old)

    def _read_txid(self) -> str | None:
        return _txid_of(self.connection)

    def _bounded(self, work: Callable[[], T], what: str) -> T:
        """``work()`` in a helper thread, given up after ``replica.timeout()`` seconds: the extension
        waits inside SQLite without a bound while its storage does not answer."""
        total = replica.timeout()
        limit = total if self._until is None else max(0.0, self._until - time.monotonic())
        outcome: dict[str, object] = {}

        def run() -> None:
            self._inside.active = True
            try:
                outcome["value"] = work()
            except BaseException as exc:  # handed to the caller's thread below
                outcome["error"] = exc

        worker = threading.Thread(target=run, name="fgraph-replica-read", daemon=True)
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            self.counts["timeouts"] += 1
            self._conn = None  # stuck inside the extension: abandoned, never closed (closing would wait too)
            raise NotFound(f"the Litestream replica {self.path!r} did not {what} within {total:g} s (its storage "
                           "does not answer)",
                           f"check that the storage is up and reachable, then retry; {settings.REPLICA_TIMEOUT} "
                           "sets the wait, LITESTREAM_LOG_LEVEL=DEBUG shows the VFS at work")
        if "error" in outcome:
            error = outcome["error"]
            assert isinstance(error, BaseException)
            raise error
        return outcome["value"]  # type: ignore[return-value]  # set by run() when no error was


def _txid_of(conn: apsw.Connection) -> str | None:
    value = conn.execute("SELECT litestream_txid()").fetchall()[0][0]
    return str(value) if value is not None else None


def _number(txid: str | None) -> int:
    """A Litestream txid (16 hex digits) as a number; 0 when there is none or it is not one."""
    try:
        return int(txid or "0", 16)
    except ValueError:
        return 0


def _close_later(conn: apsw.Connection) -> None:
    """Close in a helper thread: a close may wait on the storage like any call into the extension."""
    def close() -> None:
        try:
            conn.close(True)
        except apsw.Error:
            pass
    threading.Thread(target=close, name="fgraph-replica-close", daemon=True).start()


def _detail(exc: BaseException | None) -> str:
    if isinstance(exc, FgraphError):
        return exc.message[:200]
    return (str(exc) or type(exc).__name__)[:200]


# Db's methods that read and return a finished answer: each runs whole inside the follower, so a retry
# re-runs the method on a fresh connection, never half of it. tests/core/test_replica_follow.py checks
# that every public name of Db is in GUARDED or UNGUARDED.
GUARDED = frozenset((
    "excision_record", "redacted_remainder", "holds_event", "stand_ins", "event_records", "info", "stats", "entity",
    "q", "explain", "datoms", "search", "context", "schema", "attributes", "schema_manifest", "check_schema_manifest",
    "validate", "pull", "incoming", "about", "history", "why", "diff", "changes", "receipt", "resolve_time", "resolve",
    "latest_tx", "doctor", "diagnose", "logical_digest", "content_digest"))
# Writes (refused on a replica before they read), the clock, lifecycle, attributes, and the streams that
# yield as they read (not bounded: docs/replication.md).
UNGUARDED = frozenset((
    "transact", "add", "undo", "retract", "declare", "declare_shape", "apply_schema_manifest", "speculate", "excise",
    "carry_out_excision", "apply", "apply_summary", "restore", "backup", "close", "at", "now", "iter_events",
    "iter_tx_events", "follow_lines", "follow", "iter_snapshot", "snapshot", "connection", "query_budget", "path",
    "read_only", "basis"))


def following(path: str, make: Callable[..., Any], **options: Any) -> Any:
    """The library's Db of a ``litestream:URL`` replica (``make(connection, path, read_only=True, **options)``,
    the Db class), each of its reads through a Follower. Typed Any: it stands for a Db, read by read."""
    follower = Follower(path, lambda name: connection.open_replica(name, True))
    return FollowingDb(follower, make(follower.connection, path, read_only=True, **options), owns=True)


class FollowingDb:
    """A Db (or a view from ``at()``) whose reads each run inside the follower, on its current connection;
    everything else is the Db's own."""

    def __init__(self, follower: Follower, db: Any, *, owns: bool) -> None:
        self.follower, self._db, self._owns = follower, db, owns

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._db, name)
        if name not in GUARDED:
            return value
        db, follower = self._db, self.follower

        def read(*args: Any, **kwargs: Any) -> Any:
            def on_current() -> Any:
                db.connection = follower.connection  # the follower's connection of this read
                return value(*args, **kwargs)
            return follower.call(on_current)
        return read

    def at(self, value: Any) -> FollowingDb:
        """A view at ``value`` whose reads go through the same follower."""
        def view() -> Any:
            self._db.connection = self.follower.connection
            return self._db.at(value)
        return FollowingDb(self.follower, self.follower.call(view), owns=False)

    def replica_position(self) -> JSONObject:
        """Litestream's position and the follower's counts (reads, reopens, frozen, behind, retried, timeouts)."""
        return self.follower.position()

    def close(self) -> None:
        if self._owns:
            self.follower.close()

    def __enter__(self) -> FollowingDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<fgraph Db of the Litestream replica {self.follower.path!r}>"
