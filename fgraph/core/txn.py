"""The one place transactions are opened: ``write_transaction`` and ``read_transaction``.

Every write (transact, apply, restore, excise, undo, doctor's repair, genesis) runs
inside ``write_transaction``: ``BEGIN IMMEDIATE`` takes the write lock before any read,
so the basis a write plans against cannot move under it (spec 03 §9). Leaving the block
normally commits; ``discard()`` ends it without writing (a no-op, an already-applied
retry); any exception rolls back and clears the caches handed in, which may have learned
rows that are now gone.

Reads that must see one consistent state across several queries (snapshot, doctor,
backup's verification) run inside ``read_transaction``, which joins a transaction the
caller already holds instead of nesting one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

import apsw

from fgraph.core.errors import Conflict
from fgraph.core.rows import Rows
from fgraph.core.sqlite_errors import translate


class WriteTransaction:
    """The handle of an open write transaction."""

    __slots__ = ("conn", "discarded")

    def __init__(self, conn: apsw.Connection):
        self.conn = conn
        self.discarded = False

    def discard(self) -> None:
        """End the transaction without writing anything when the block is left."""
        self.discarded = True


class Cache(Protocol):
    """What a transaction clears when it rolls back: a cache that may have learned rows now gone."""

    def clear(self) -> None: ...


_SPECULATING: set[int] = set()


def is_speculating(conn: apsw.Connection) -> bool:
    return id(conn) in _SPECULATING


@contextlib.contextmanager
def speculation(conn: apsw.Connection, *caches: Cache) -> Iterator[None]:
    """``speculate()`` (spec 13 §15): one deferred transaction that is always rolled back. Writes
    inside it run as savepoints, so they plan, allocate and report as if they committed; the first
    of them takes the write lock (a busy writer elsewhere makes it wait, then ``Conflict``)."""
    if not conn.getautocommit():
        raise Conflict("this connection is inside a read or a write", "speculate from an idle handle")
    conn.execute("BEGIN")
    _SPECULATING.add(id(conn))
    try:
        yield
    finally:
        _SPECULATING.discard(id(conn))
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        for cache in caches:
            cache.clear()


@contextlib.contextmanager
def _savepoint(conn: apsw.Connection, caches: tuple[Cache, ...]) -> Iterator[WriteTransaction]:
    try:
        conn.execute("SAVEPOINT fgraph_write")
        Rows(conn).take_write_lock()
    except (apsw.BusyError, apsw.LockedError):
        raise Conflict("the database is locked by another writer",
                       "retry in a moment; only one process can write at a time") from None
    handle = WriteTransaction(conn)
    try:
        yield handle
        if handle.discarded:
            conn.execute("ROLLBACK TO fgraph_write")
        conn.execute("RELEASE fgraph_write")
    except BaseException:
        for cache in caches:
            cache.clear()
        conn.execute("ROLLBACK TO fgraph_write")
        conn.execute("RELEASE fgraph_write")
        raise


@contextlib.contextmanager
def step(conn: apsw.Connection, *caches: Cache) -> Iterator[None]:
    """One step inside an open write transaction that may fail alone (``apply --dry-run`` counts a
    conflicting event and goes on): on any exception the step's writes are rolled back, the caches
    cleared (they may hold rows the step registered), and the exception goes on to the caller."""
    conn.execute("SAVEPOINT fgraph_step")
    try:
        yield
    except BaseException:
        for cache in caches:
            cache.clear()
        if not conn.getautocommit():
            conn.execute("ROLLBACK TO fgraph_step")
            conn.execute("RELEASE fgraph_step")
        raise
    conn.execute("RELEASE fgraph_step")


@contextlib.contextmanager
def write_transaction(conn: apsw.Connection, *caches: Cache) -> Iterator[WriteTransaction]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; ROLLBACK (and ``cache.clear()``) on any exception.
    Inside a speculation, a savepoint instead."""
    if is_speculating(conn):
        with _savepoint(conn, caches) as handle:
            yield handle
        return
    if not conn.getautocommit():
        raise Conflict("this connection is still inside a read: a snapshot or event iterator was left unfinished",
                       "finish or close() that iterator before writing, or write through another connection")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except (apsw.BusyError, apsw.LockedError):
        raise Conflict("the database is locked by another writer",
                       "retry in a moment; only one process can write at a time") from None
    handle = WriteTransaction(conn)
    try:
        yield handle
        if not conn.getautocommit():
            conn.execute("ROLLBACK" if handle.discarded else "COMMIT")
    except BaseException as exc:
        for cache in caches:
            cache.clear()
        _roll_back(conn)
        typed = translate(exc, writing=True)
        if typed is not None:
            raise typed from None
        raise


def _roll_back(conn: apsw.Connection) -> None:
    """ROLLBACK unless SQLite already did (it does after some I/O and full-disk failures). A
    rollback that fails itself leaves the hot journal or WAL frames that SQLite discards on
    the next open, so the original error is the one worth reporting."""
    if conn.getautocommit():
        return
    try:
        conn.execute("ROLLBACK")
    except apsw.Error:
        pass


@contextlib.contextmanager
def read_transaction(conn: apsw.Connection) -> Iterator[None]:
    """One consistent read; joins the caller's transaction if one is open.

    A read that ends by an exception still ends its transaction; if even that fails (a
    damaged file can fail at COMMIT), it rolls back: a read has nothing to lose.
    """
    own = conn.getautocommit()
    if own:
        conn.execute("BEGIN")
    try:
        yield
    except apsw.Error as exc:
        typed = translate(exc)
        if typed is not None:
            raise typed from None
        raise
    finally:
        if own and not conn.getautocommit():
            try:
                conn.execute("COMMIT")
            except apsw.Error:
                _roll_back(conn)
