"""Opening a format-v2 file: connection policy, classification and ownership (spec 01 §3–§4).

Every setting is one small function with the reason it exists; ``open_connection``
applies them in order. A file that is not ours is classified from read-only
queries first and never written to.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import apsw

from fgraph.core import layout, probe, replica
from fgraph.core.errors import FormatError, NotFound, QueryError, ReadOnly, rewrap
from fgraph.core.sidecars import refuse_sidecar_name
from fgraph.core.limits import MEMORY
from fgraph.core.sqlite_errors import not_writable, translate

if TYPE_CHECKING:
    from fgraph.core.identity import Clock

BUSY_TIMEOUT_MS = 5000


def set_busy_timeout(conn: apsw.Connection) -> None:
    """Wait up to 5 s for another writer before giving up with Conflict (01 §3)."""
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)


def set_wal_journal(conn: apsw.Connection) -> None:
    """WAL lets readers (tail, backup, doctor) run beside one writer; it must stick.

    Switching a new file to WAL needs an exclusive lock, and SQLite answers BUSY at once
    instead of calling the busy handler when another process is creating the same file:
    wait for it here, within the same 5 s a writer would wait."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchall()[0][0]
            break
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.002)
    if str(mode).lower() != "wal":
        raise FormatError(f"could not switch the database to WAL mode (got {mode!r})",
                          "put the file on a local filesystem that supports shared memory")


def set_synchronous_full(conn: apsw.Connection) -> None:
    """FULL: a commit that returned survives power loss (the durability promise)."""
    conn.execute("PRAGMA synchronous = FULL")


def set_wal_autocheckpoint(conn: apsw.Connection) -> None:
    """The SQLite default, set explicitly so every runtime checkpoints alike."""
    conn.execute("PRAGMA wal_autocheckpoint = 1000")


def disable_foreign_keys(conn: apsw.Connection) -> None:
    """The format has no FOREIGN KEY clauses; integrity is checked by doctor instead."""
    conn.execute("PRAGMA foreign_keys = OFF")


def distrust_schema(conn: apsw.Connection) -> None:
    """A file may come from anywhere: never run functions named by its schema."""
    conn.execute("PRAGMA trusted_schema = OFF")


def set_query_only(conn: apsw.Connection, read_only: bool) -> None:
    """Read-only handles refuse writes inside SQLite itself, not only in our code."""
    conn.execute(f"PRAGMA query_only = {1 if read_only else 0}")


@contextmanager
def temp_schema_writable(conn: apsw.Connection) -> Iterator[None]:
    """TEMP tables allowed for the duration (a query's intermediate relations, the search vocabulary).

    A read-only handle's ``query_only`` guard is lifted meanwhile; its main database stays unwritable
    by its open flags (``SQLITE_OPEN_READONLY``). A handle guarded by ``query_only`` alone has no such
    second lock, so it is refused rather than left writable."""
    guarded = conn.execute("PRAGMA query_only").fetchone()[0]  # type: ignore[index]  # a PRAGMA always has a row
    if guarded and not conn.readonly("main"):
        raise QueryError("this read needs TEMP tables, and the handle is read-only by query_only alone",
                         "open the database with fgraph.connect(path, read_only=True)")
    if guarded:
        set_query_only(conn, False)
    try:
        yield
    finally:
        if guarded:
            set_query_only(conn, True)


def read_only_uri(path: str) -> str:
    """The URI of the read-only open rule: ``mode=ro``, plus ``immutable=1`` where
    ``needs_immutable`` says so (fgraph's own rare immutable open, and the browser's sqlite3)."""
    return f"file:{_quoted(path)}?mode=ro" + ("&immutable=1" if needs_immutable(path) else "")


def _quoted(path: str) -> str:
    import urllib.parse  # only URI opens need it; at the top it costs every start 3 ms
    return urllib.parse.quote(os.path.abspath(path), safe="/")


def needs_immutable(path: str) -> bool:
    """A WAL file in a read-only directory without sidecars can only be opened immutable."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    if os.access(directory, os.W_OK):
        return False
    return not (os.path.exists(path + "-wal") or os.path.exists(path + "-shm"))


def _connect_raw(path: str, read_only: bool) -> apsw.Connection:
    # A plain file name, not a URI: the name is taken literally ("?" and "#" included), and the
    # open flags say read-only or read-write-create.
    if read_only:
        if needs_immutable(path):
            return apsw.Connection(read_only_uri(path), flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        return apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    return apsw.Connection(path, flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)


def check_path(path: object) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise FormatError(f"database path must be a string, not {type(path).__name__}",
                          "pass a file path or ':memory:'")
    text = os.fspath(path)
    if text == "":
        raise FormatError("the database path is empty", "pass --db PATH or set FGRAPH_DB to a file path")
    return text


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str | None:
    """What a non-regular file is, or None for a regular file."""
    for test, what in _KINDS:
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def refuse_special_files(path: str) -> None:
    """Only regular files (or a missing path) may be opened: SQLite blocks forever reading a FIFO,
    and next to /dev/null it would create /dev/null-journal. Sidecars are held to the same rule, and
    may not be links either (SQLite refuses one with a bare "unable to open"). They are looked for
    where SQLite puts them: beside the file a linked database path resolves to."""
    real = os.path.realpath(path)
    for candidate, role in ((path, "database"), (real + "-wal", "WAL file"), (real + "-shm", "shared-memory file"),
                            (real + "-journal", "journal")):
        try:
            mode = os.stat(candidate).st_mode if role == "database" else os.lstat(candidate).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise FormatError(f"cannot examine {candidate!r}: {exc.strerror}",
                              "check the path and the permissions of its directories") from None
        if role != "database" and stat.S_ISLNK(mode):
            raise FormatError(f"the {role} {candidate!r} of database {path!r} is a symbolic link",
                              "remove the link (SQLite recreates its sidecar files); fgraph never writes through one")
        what = _kind(mode)
        if what is None:
            continue
        if role == "database":
            hint = "pass a file path" if stat.S_ISDIR(mode) else "point --db at an fgraph database file or a new path"
            raise FormatError(f"{path!r} is {what}, not a database file", hint)
        raise FormatError(f"the {role} {candidate!r} of database {path!r} is {what}",
                          "remove it (SQLite recreates its sidecar files) or use another database path")


def _holds_data(path: str) -> bool:
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def open_immutable_copy(path: str) -> apsw.Connection:
    """Read-only and immutable, for a scratch copy nobody else writes (a backup being verified):
    no sidecar file is created, and the file is classified before it is read."""
    conn = apsw.Connection("file:" + _quoted(path) + "?mode=ro&immutable=1",
                           flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        set_busy_timeout(conn)
        distrust_schema(conn)
        set_query_only(conn, True)
        layout.classify(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def open_replica(path: str, read_only: bool) -> apsw.Connection:
    """A ``litestream:URL`` read replica (fgraph.core.replica): read-only, classified like a file; no WAL,
    sidecar or genesis step applies, since the extension serves the pages and refuses writes."""
    if not read_only:
        raise replica.refuse_write(path)
    conn = replica.connect_raw(path)
    try:
        set_busy_timeout(conn)
        distrust_schema(conn)
        set_query_only(conn, True)
        conn.execute("PRAGMA temp_store = MEMORY")  # sorts and temp tables stay off the replica's VFS
        if layout.classify(conn, path) == layout.EMPTY:
            raise FormatError(f"{path!r} is a replica of a database that is not initialized",
                              "run `fgraph init` on the primary before `litestream replicate` first sees it")
        return conn
    except BaseException:
        conn.close()
        raise


def open_connection(path: str | os.PathLike[str], read_only: bool = False, *,
                    genesis_clock: Clock | int | None = None) -> apsw.Connection:
    """Open, classify and configure a connection; initialise a new writable file.

    ``genesis_clock`` is the clock used when the file needs genesis.
    """
    path = check_path(path)
    if replica.is_replica(path):
        return open_replica(path, read_only)
    replica.refuse_local_open(path)
    if read_only and path == MEMORY:
        raise ReadOnly("a :memory: database cannot be opened read-only",
                       "open it writable, or use a file path")
    if read_only and not os.path.exists(path):
        raise NotFound(f"database {path!r} does not exist", "check the path, or run `fgraph init` first")
    if path != MEMORY:
        refuse_special_files(path)
        if not read_only and not _holds_data(path):
            refuse_sidecar_name(path, "new database")
    try:
        conn = _connect_raw(path, read_only)
    except apsw.CantOpenError as exc:
        cause = None if read_only or path == MEMORY else not_writable(path)
        if cause is not None:   # a new file in a directory this user cannot write
            raise cause from None
        raise FormatError(f"cannot open database {path!r}: {exc}",
                          "check that the file and its directory exist and are accessible") from None
    except apsw.Error as exc:
        typed = translate(exc, writing=not read_only)
        if typed is None:
            raise
        raise rewrap(typed, before=f"{path!r}: ") from exc
    try:
        if not read_only and path != MEMORY and conn.readonly("main"):   # SQLite fell back to reading
            raise not_writable(path) or ReadOnly(f"{path!r} can only be read here",
                                                 "check its permissions and those of its directory")
        set_busy_timeout(conn)
        state = layout.classify(conn, path)
        if state == layout.FOREIGN:  # pragma: no cover - classify raises instead
            raise FormatError(f"{path!r} is not an fgraph database")
        if read_only:
            if state == layout.EMPTY:
                raise FormatError(f"{path!r} is not an initialized fgraph database",
                                  "initialize it with `fgraph init` (a writable open)")
        elif path != MEMORY:
            set_wal_journal(conn)
        set_synchronous_full(conn)
        set_wal_autocheckpoint(conn)
        disable_foreign_keys(conn)
        distrust_schema(conn)
        set_query_only(conn, read_only)
        if state == layout.EMPTY:
            layout.initialize(conn, path, genesis_clock)
        return conn
    except BaseException as exc:
        conn.close()
        typed = exc if isinstance(exc, ReadOnly) else translate(exc, writing=not read_only)
        # a writer that could not make the -wal/-shm files beside a WAL file (translated already by a
        # read transaction, the SQLite error kept as its context): the directory may be why
        cant_open = not read_only and apsw.CantOpenError in (type(exc), type(exc.__context__)) \
            and path != MEMORY and needs_immutable(path) and probe.is_initialized(path)
        if cant_open:
            raise (not_writable(path) or exc) from exc
        if isinstance(typed, ReadOnly) and path != MEMORY:   # say which of file, directory, filesystem
            raise (not_writable(path) or rewrap(typed, before=f"{path!r}: ")) from exc
        if typed is not None:
            raise rewrap(typed, before=f"{path!r}: ") from exc
        raise


def close_connection(conn: apsw.Connection) -> None:
    """Close; a failure (the disk went away, a final checkpoint could not write) is reported as
    its typed error after the handle is released anyway: nothing committed depends on it."""
    try:
        conn.close()
    except apsw.Error as exc:
        conn.close(True)
        typed = translate(exc)
        if typed is None:
            raise
        raise rewrap(typed, before="closing the database: ") from exc
