"""SQLite's failures as fgraph's typed errors: disk full, I/O, read-only, cannot open, not a database.

These come from the machine, not from a bug, so a user must see what happened and what to do
next instead of "internal error". The transaction helpers translate what escapes a transaction
(after rolling it back, so "nothing was written" is true there); the faces translate whatever
escapes elsewhere (an iterator, a close) through ``translate`` without touching SQLite themselves.
"""

from __future__ import annotations

import os

import apsw

from fgraph.core.errors import Conflict, FgraphError, FormatError, ReadOnly, TooLarge, damaged



def as_typed(exc: BaseException) -> FgraphError | None:
    """What a face (CLI, MCP) shows for ``exc``: a typed error as it is, an SQLite failure of the
    environment translated, None for anything else (a bug: "internal error")."""
    return exc if isinstance(exc, FgraphError) else translate(exc)


def translate(exc: BaseException, *, writing: bool = False) -> FgraphError | None:
    """The typed error for an SQLite failure of the environment; None for anything else (a bug)."""
    after = "; the transaction was rolled back, nothing of it was written" if writing else ""
    if isinstance(exc, apsw.FullError):
        return TooLarge("the database or the disk is full",
                        f"free space (or raise the file size limit) and retry{after}")
    if isinstance(exc, apsw.ReadOnlyError) and getattr(exc, "extendedresult", None) == apsw.SQLITE_READONLY_ROLLBACK:
        # a write was interrupted (kill -9, a crash) and left a hot journal: only a writer rolls it back
        return ReadOnly("the database has a hot journal from an interrupted write, which a read-only "
                        "handle cannot roll back", "open it writable once (any write command, or "
                        "`fgraph doctor` without a read-only open); SQLite then undoes the interrupted write")
    if isinstance(exc, apsw.ReadOnlyError):
        return ReadOnly("the database file cannot be written (a read-only file, directory or filesystem)",
                        f"check the permissions of the file and its directory, or open it read-only{after}")
    if isinstance(exc, apsw.IOError):
        return FormatError(f"SQLite could not read or write the file ({_detail(exc)})",
                           f"check free space, the file size limit (ulimit -f) and the disk, then retry{after}")
    if isinstance(exc, apsw.CantOpenError):
        return FormatError("SQLite could not open the database or one of its -wal/-shm/-journal files",
                           f"check that the file and its directory exist and are accessible{after}")
    if isinstance(exc, (apsw.NotADBError, apsw.CorruptError)):
        return FormatError(f"the file is not a database or is damaged ({_detail(exc)})",
                           f"run `fgraph doctor`, and restore from a backup or snapshot if it reports damage{after}")
    if isinstance(exc, UnicodeDecodeError):
        # the driver decodes every TEXT value it returns; bytes that are not UTF-8 there mean a
        # damaged page (or a write from outside fgraph), never input: input is decoded and refused
        # where it is read. The stored bytes stay out of the message: they may be anyone's data.
        return damaged(f"the database holds text that is not valid UTF-8 (byte {exc.start} of a stored string)",
                       after=after)
    if isinstance(exc, (apsw.BusyError, apsw.LockedError)):
        return Conflict("the database is locked by another process",
                        f"retry in a moment; only one process can write at a time{after}")
    return None


def _detail(exc: BaseException) -> str:
    text = str(exc).split(":", 1)[-1].strip() or type(exc).__name__
    if text == "not an error":  # the backup API loses the code of a failed destination write
        return "a write failed"
    return text[:200]



def not_writable(path: str, *, after: str = "") -> ReadOnly | None:
    """Why ``path`` cannot be opened for writing, as ``ReadOnly`` naming what to change (issue 49
    item 3), or None when the file, its directory and the filesystem all let this user write: a
    writer needs the file and, for the ``-wal`` and ``-shm`` files beside it, its directory."""
    folder = os.path.dirname(os.path.abspath(path))
    who = f"user {os.geteuid()}" if hasattr(os, "geteuid") else "this user"
    try:
        read_only_fs = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_fs = False
    if read_only_fs:
        return ReadOnly(f"{path!r} is on a read-only filesystem",
                        f"mount it read-write or copy the file elsewhere, or open it read-only (--read-only commands "
                        f"such as get, q or tail){after}")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return ReadOnly(f"{path!r} cannot be written by {who}: it is read-only (file permissions or the "
                        "immutable attribute)",
                        f"make it writable (chmod u+w {path!r}, chown it to this user, or chattr -i), or only read "
                        f"it (get, q, tail){after}")
    if not os.access(folder, os.W_OK):
        return ReadOnly(f"the directory {folder!r} of {path!r} cannot be written by {who}, and a writer creates "
                        f"the database and its -wal and -shm files there",
                        f"make the directory writable (chmod u+w {folder!r}), or put the database in a writable "
                        f"directory{after}")
    return None
