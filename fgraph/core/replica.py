"""Read replicas in object storage: ``litestream:URL`` opens a Litestream 0.5 replica read-only
through the ``litestream-vfs`` SQLite extension, without restoring it (docs/replication.md,
§Read replicas).

``URL`` is a Litestream replica URL (``s3://bucket/path?endpoint=…``, ``file:///dir``, …),
handed to the extension as its ``replica_url`` URI parameter; credentials and other knobs of
the storage come from the extension's own environment variables (``LITESTREAM_ACCESS_KEY_ID``,
``AWS_*``, …). The extension is optional (``pip install 'fgraph[litestream]'``) and is loaded
the first time a replica is opened. The extension is a Go library: it reads the process
environment once, when it is loaded.

While a replica has no snapshot yet, or its storage cannot be reached, the extension waits
inside ``open`` without a bound; the open therefore runs in a helper thread and is given up
after ``FGRAPH_REPLICA_TIMEOUT`` seconds.
"""

from __future__ import annotations

import fcntl
import io
import os
import sys
import threading
from typing import TYPE_CHECKING, TypedDict

import apsw

from fgraph.core import layout, settings
from fgraph.core.errors import FormatError, NotFound, ReadOnly, Unsupported

if TYPE_CHECKING:
    from fgraph.core.types import JSONObject

    class _Opened(TypedDict, total=False):
        """What the opening thread leaves behind: the connection, or the error that stopped it."""
        conn: apsw.Connection
        error: apsw.Error

PREFIX = "litestream:"
VFS_NAME = "litestream"
ENTRY_POINT = "sqlite3_litestreamvfs_init"
DEFAULT_TIMEOUT_S = 30.0
_SCHEMES = ("s3", "gs", "abs", "file", "sftp", "webdav", "oss", "nats")

_loaded = threading.Lock()
_extension: str | None = None


def is_replica(path: object) -> bool:
    """Whether a database name is a ``litestream:`` replica URL."""
    return isinstance(path, str) and path.startswith(PREFIX)


def replica_url(path: str) -> str:
    """The Litestream replica URL of ``litestream:URL``; a name without a usable URL is refused."""
    url = path[len(PREFIX):]
    scheme, sep, rest = url.partition("://")
    if not sep or not rest or scheme not in _SCHEMES:
        raise FormatError(f"{path!r} is not a Litestream replica URL",
                          f"write litestream:SCHEME://…, SCHEME one of {', '.join(_SCHEMES)}, "
                          "e.g. litestream:s3://bucket/team.fgraph?endpoint=http://host:9000")
    return url


def refuse_write(path: str) -> ReadOnly:
    return ReadOnly(f"{path!r} is a Litestream read replica",
                    "open it read-only (read_only=True, or a read command such as get, q, search, context, "
                    "mcp) and write to the primary database file")


def timeout() -> float:
    """Seconds to wait for a replica to open: FGRAPH_REPLICA_TIMEOUT, else 30; nonsense is refused."""
    return settings.seconds(settings.REPLICA_TIMEOUT, DEFAULT_TIMEOUT_S, example=60)


def extension_path() -> str:
    """FGRAPH_LITESTREAM_VFS, else the library the ``litestream-vfs`` package ships."""
    configured = settings.read(settings.LITESTREAM_VFS)
    if configured:
        return configured
    try:
        import litestream_vfs
        path: str = litestream_vfs.loadable_path()
        return path
    except (ImportError, OSError) as exc:
        raise Unsupported(f"reading a Litestream replica needs the litestream-vfs extension ({exc})",
                          "pip install 'fgraph[litestream]', or set FGRAPH_LITESTREAM_VFS to the "
                          "litestream-vfs library") from None


def load_extension() -> None:
    """Register the ``litestream`` VFS in this process, once."""
    global _extension
    with _loaded:
        if _extension is not None:
            return
        path = extension_path()
        log_to_stderr()
        layout.expected_objects()  # its scratch :memory: database could not be opened afterwards (see loaded())
        loader = apsw.Connection(":memory:")
        try:
            loader.enable_load_extension(True)
            loader.load_extension(path, ENTRY_POINT)
        except apsw.Error as exc:
            raise Unsupported(f"the litestream-vfs extension {path!r} could not be loaded: {exc}",
                              "install a litestream-vfs build for this platform (pip install "
                              "'fgraph[litestream]')") from None
        finally:
            loader.close()
        if VFS_NAME not in apsw.vfs_names():  # pragma: no cover - a foreign library
            raise Unsupported(f"{path!r} did not register the {VFS_NAME!r} VFS", "point FGRAPH_LITESTREAM_VFS "
                              "at the litestream-vfs library")
        _extension = path


LOG_FILE = "LITESTREAM_LOG_FILE"
_stdout_kept: list[object] = []  # the rebound sys.stdout, kept alive for the process


def log_to_stderr() -> None:
    """Keep the extension's log off stdout, which carries the command's output (``--json``) or the MCP
    protocol: litestream-vfs 0.5.17 logs on file descriptor 1 unless LITESTREAM_LOG_FILE was in the
    environment the process *started* with (the Go library reads that copy, not ``os.environ``). So,
    before it is loaded, descriptor 1 is pointed at stderr and ``sys.stdout`` is rebound to a private
    duplicate of the real stdout: Python's output still goes where it went, the library's lands on
    stderr. An operator's own LITESTREAM_LOG_FILE (set when the process started) is left to work."""
    if _started_with(LOG_FILE):
        return
    stream = sys.stdout
    try:
        writes_fd1 = stream is not None and stream.fileno() == 1
    except (AttributeError, OSError, ValueError):  # a replaced stream (a test's capture): not fd 1's
        writes_fd1 = False
    try:
        if stream is not None:
            stream.flush()
        private = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        os.dup2(2, 1)
    except OSError:  # no stdout or stderr to speak of: nothing to keep apart
        return
    if writes_fd1:
        assert stream is not None
        rebound = io.TextIOWrapper(open(private, "wb", closefd=False), encoding=stream.encoding,
                                   errors=stream.errors, line_buffering=bool(stream.line_buffering))
        _stdout_kept.append(rebound)
        sys.stdout = rebound
    else:
        os.close(private)


def _started_with(name: str) -> bool:
    """Whether ``name`` was set (non-empty) in the environment this process was started with."""
    try:
        with open("/proc/self/environ", "rb") as handle:
            initial = handle.read(1 << 20)
    except OSError:  # no /proc: keep the log off stdout all the same
        return False
    prefix = name.encode() + b"="
    return any(entry.startswith(prefix) and len(entry) > len(prefix) for entry in initial.split(b"\0"))


def loaded() -> bool:
    """Whether this process has loaded the extension. litestream-vfs 0.5.17 then breaks every other open:
    its auto-extension (run on each new connection) is declared ``void`` in C, so for a connection not on
    its VFS SQLite reads a garbage return code and fails the open (APSW shows ``SystemError: ... returned
    NULL``). ``refuse_local_open`` turns that into a typed error."""
    return _extension is not None


def refuse_local_open(path: str) -> None:
    if _extension is not None:
        raise Unsupported(f"cannot open {path!r} in a process that has opened a Litestream replica "
                          "(litestream-vfs 0.5.17 then makes every other SQLite open fail)",
                          "open local databases in another process than replicas; to copy a replica, "
                          "`litestream restore` it")


def uri(path: str) -> str:
    """The SQLite URI of a replica: the ``litestream`` VFS, read-only, with the replica URL."""
    import urllib.parse  # only replica opens need it; at the top it costs every start 3 ms
    return (f"file:replica.fgraph?vfs={VFS_NAME}&mode=ro&replica_url="
            f"{urllib.parse.quote(replica_url(path), safe='')}")


def connect_raw(path: str) -> apsw.Connection:
    """A read-only connection to the replica, or a typed error; bounded by ``timeout()``."""
    target = uri(path)
    limit = timeout()
    load_extension()
    outcome: _Opened = {}

    def open_it() -> None:
        try:
            conn = apsw.Connection(target, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, vfs=VFS_NAME)
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
            outcome["conn"] = conn
        except apsw.Error as exc:
            outcome["error"] = exc

    opener = threading.Thread(target=open_it, name="fgraph-replica-open", daemon=True)
    opener.start()
    opener.join(limit)
    if opener.is_alive():
        raise NotFound(f"the Litestream replica {path!r} did not open within {limit:g} s (no snapshot there yet, "
                       "or its storage does not answer)",
                       f"check the URL and that `litestream replicate` has written to it; "
                       f"{settings.REPLICA_TIMEOUT} sets the wait, LITESTREAM_LOG_LEVEL=DEBUG shows the VFS at work")
    if "error" in outcome:
        raise NotFound(f"cannot open the Litestream replica {path!r}: {outcome['error']}",
                       "check the URL, the storage credentials (LITESTREAM_ACCESS_KEY_ID, AWS_*) and that a replica "
                       "exists there; LITESTREAM_LOG_LEVEL=DEBUG shows why the VFS failed") from None
    return outcome["conn"]


def position(conn: apsw.Connection) -> JSONObject:
    """Where the replica stands: Litestream's transaction id, its view time, and seconds since its last poll."""
    txid, lag, at = conn.execute("SELECT litestream_txid(), litestream_lag(), litestream_time()").fetchall()[0]
    return {"litestream_txid": txid, "poll_lag_s": lag, "time": at}
