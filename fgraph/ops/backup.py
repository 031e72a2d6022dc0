"""Physical backups that prove themselves: ``backup`` and ``restore_backup`` (spec 06 §1–§2).

The copy is made with SQLite's online backup API in one step (a consistent snapshot of the
source, however busy its writer), into a private temporary sibling of the destination. The
temporary file is verified by the full doctor through an immutable read-only handle (so no
``-wal``/``-shm`` sidecars appear), its basis transaction and logical digest are read from
the copy itself, then ``core.files.publish`` fsyncs it and gives it its name with a hard link,
which never replaces an existing name (or renames it over the empty file a restore was pointed
at), and fsyncs the directory.

Nothing is left behind: every exit path removes the temporary name and its sidecars, and a
tiny watchdog process removes them if this process is killed (SIGKILL) before it finishes.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time

import apsw

from fgraph.core.files import check_regular_file, publish, same_file
from fgraph.core.sidecars import refuse_sidecar_name
from fgraph.core import connection, layout, replica
from fgraph.ops import doctor
from fgraph.ops.digest_worker import DigestWorker, map_private_copy
from fgraph.core.errors import Conflict, FgraphError, FormatError, NotFound, Unsupported, rewrap
from fgraph.core.sqlite_errors import translate
from fgraph.streams.snapshot import logical_digest
from fgraph.core.txn import is_speculating, read_transaction

SIDECARS = ("", "-journal", "-wal", "-shm")
BUSY_RETRIES = 20
BUSY_PAUSE = 0.1
WATCHDOG = ("import os, sys\n"
            "if sys.stdin.buffer.read() != b'done':\n"
            "    for p in sys.argv[1:]:\n"
            "        try: os.unlink(p)\n"
            "        except OSError: pass\n")


def _path(value, what: str) -> str:
    if not isinstance(value, (str, os.PathLike)) or os.fspath(value) in ("", connection.MEMORY):
        raise FormatError(f"{what} {value!r} is not a file path", "pass a path to a new file")
    return os.fspath(value)


def _os_error(dest: str, exc: OSError, verb: str = "created") -> FormatError:
    return FormatError(f"backup destination {dest!r} cannot be {verb} ({exc.strerror or exc})",
                       "choose a new path in an existing, writable directory with free space")


class _Scratch:
    """A temporary sibling and its sidecars, removed on every exit, even SIGKILL (by a watchdog)."""

    def __init__(self, dest: str, suffix: str):
        directory = os.path.dirname(os.path.abspath(dest))
        self.directory = directory
        self.path = os.path.join(directory, f".{os.path.basename(dest)}.{secrets.token_hex(4)}.{suffix}")
        self.names = [self.path + s for s in SIDECARS]
        self.watchdog = None

    def __enter__(self) -> "_Scratch":
        if not os.path.isdir(self.directory):
            raise FileNotFoundError(2, "No such directory", self.directory)
        if sys.executable:
            try:
                self.watchdog = subprocess.Popen([sys.executable, "-S", "-P", "-c", WATCHDOG, *self.names],
                                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                self.watchdog = None  # best effort: the in-process cleanup below still runs
        try:
            os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for name in self.names:
            try:
                os.unlink(name)
            except OSError:
                pass
        if self.watchdog is not None:
            try:
                self.watchdog.communicate(b"done", timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.watchdog.kill()
                self.watchdog.wait()


def copy_pages(source: apsw.Connection, target: str) -> None:
    """Every page of ``source`` into the existing empty file ``target``: one backup step, bounded retries."""
    replica.refuse_local_open(target)  # a process that read a litestream: replica cannot open the copy
    dest = apsw.Connection(target, flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        dest.execute("PRAGMA journal_mode = OFF")  # the file is scratch until verified: no -journal
        for attempt in range(BUSY_RETRIES + 1):
            try:
                with dest.backup("main", source, "main") as step:
                    while not step.step(-1):
                        pass
                layout.drop_tolerated(dest)  # a copy carries no Litestream bookkeeping (decision 9)
                return
            except (apsw.BusyError, apsw.LockedError):
                if attempt == BUSY_RETRIES:
                    raise Conflict("the source database stayed locked during the copy",
                                   "retry when no checkpoint or exclusive lock is running") from None
                time.sleep(BUSY_PAUSE)
    finally:
        dest.close()


def _open_source(path: str) -> apsw.Connection:
    """A backup file nobody has open in WAL mode (no sidecars) is read immutable, so none are created."""
    if any(os.path.lexists(path + s) for s in ("-wal", "-shm", "-journal")):
        return connection.open_connection(path, read_only=True)
    return connection.open_immutable_copy(path)


def _quiet(phase: str, size_bytes: int | None = None) -> None:
    pass


def _database_bytes(conn: apsw.Connection) -> int:
    return conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]


def verify_copy(path: str, what: str, on_phase=None) -> dict:
    """Full doctor, basis and logical digest of a copy, all in one read transaction. A second
    process (``digest_worker``) meanwhile runs the integrity check and one pass making the digest
    and doctor's asserting walk; whatever it fails to deliver is done here instead.
    ``on_phase(name, size_bytes)`` is told when verifying and then waiting for the digest begin."""
    on_phase = on_phase or _quiet
    worker = DigestWorker.start(path)
    try:
        conn = connection.open_immutable_copy(path)
        try:
            map_private_copy(conn)
            with read_transaction(conn):
                on_phase("verifying", os.path.getsize(path))
                report = doctor.check(conn, parallel=worker)
                if not report["ok"]:
                    raise FormatError(f"the {what} failed verification: {report['problems'][:5]!r}",
                                      "nothing was published; run `fgraph doctor` on the source and repair or "
                                      "restore it")
                basis = conn.execute("SELECT max(tx) FROM fgraph_events").fetchone()[0]
                on_phase("digest", None)
                found = worker.result()
                digest = found["digest"] if found is not None and found["basis_tx"] == basis else \
                    logical_digest(conn, basis)
            return {"basis_tx": basis, "digest": digest}
        finally:
            conn.close()
    finally:
        worker.stop()


def _sqlite_failure(what: str, exc: BaseException) -> FgraphError:
    """The backup API reports a failed destination write as "not an error": say what it means."""
    typed = translate(exc, writing=True)
    if typed is None or str(exc).endswith("not an error"):
        return FormatError(f"{what} failed: the copy could not be written (disk full, file size limit or I/O error)",
                           "free space or raise the limit and retry; nothing was published")
    return rewrap(typed, before=f"{what} failed: ")


def backup(source: apsw.Connection, source_path: str, dest, on_phase=None) -> dict:
    """Copy, verify, fsync and publish ``source`` at ``dest``; never touches an existing name.
    ``on_phase(name, size_bytes)`` is told as each phase begins: copying, verifying, digest, syncing."""
    on_phase = on_phase or _quiet
    if is_speculating(source):
        raise Unsupported("backup inside speculate() would copy writes that are about to be rolled back",
                          "take the backup before or after the speculation")
    dest = _path(dest, "backup destination")
    refuse_sidecar_name(dest, "backup destination")
    if source_path != connection.MEMORY and same_file(dest, source_path):
        raise Conflict(f"backup destination {dest!r} is the open database", "choose a different path")
    if os.path.lexists(dest):
        raise Conflict(f"backup destination {dest!r} already exists",
                       "choose a new file; backups never overwrite anything")
    try:
        with _Scratch(dest, "tmp") as scratch:
            on_phase("copying", _database_bytes(source))
            copy_pages(source, scratch.path)
            proof = verify_copy(scratch.path, "backup copy", on_phase)
            on_phase("syncing", None)
            publish(scratch.path, dest, "backup destination", during="the backup",
                    hint="choose a new file; backups never overwrite anything", failure=lambda exc: _os_error(dest, exc))
    except FgraphError:
        raise
    except OSError as exc:
        raise _os_error(dest, exc) from exc
    except apsw.Error as exc:
        raise _sqlite_failure(f"backup to {dest!r}", exc) from exc
    return {"basis_tx": proof["basis_tx"], "digest": proof["digest"], "path": dest}


def restore_backup(backup_file, dest, on_phase=None) -> dict:
    """Install a physical backup at ``dest`` (missing or an empty file); returns its basis and digest.
    ``on_phase(name, size_bytes)`` is told as each phase begins, as for ``backup``."""
    on_phase = on_phase or _quiet
    backup_file = _path(backup_file, "backup file")
    dest = _path(dest, "restore destination")
    refuse_sidecar_name(dest, "restore destination")
    if not os.path.exists(backup_file):
        raise NotFound(f"backup file {backup_file!r} does not exist", "check the path")
    check_regular_file(backup_file, "backup file", "name the file `fgraph backup` wrote")   # a FIFO would hang the copy
    if os.path.islink(dest):
        raise Conflict(f"restore destination {dest!r} is a symbolic link (to {os.readlink(dest)!r})",
                       "restore into a new path or an empty regular file; links are never followed or replaced")
    if os.path.lexists(dest) and (not os.path.isfile(dest) or os.path.getsize(dest)):
        raise Conflict(f"restore destination {dest!r} is not empty",
                       "restore into a new path or an empty file")
    for suffix in ("-wal", "-journal"):
        if os.path.lexists(dest + suffix):
            raise Conflict(f"restore destination {dest!r} has a leftover {dest + suffix!r}",
                           "remove the stale SQLite sidecar files, or choose a new path")
    source = _open_source(backup_file)
    try:
        with _Scratch(dest, "restore") as scratch:
            on_phase("copying", os.path.getsize(backup_file))
            copy_pages(source, scratch.path)
            proof = verify_copy(scratch.path, "restored copy", on_phase)
            on_phase("syncing", None)
            publish(scratch.path, dest, "restore destination", during="the restore", onto_empty=True,
                    hint="restore into a new path or an empty file", failure=lambda exc: _os_error(dest, exc, "written"))
    except FgraphError:
        raise
    except OSError as exc:
        raise _os_error(dest, exc, "written") from exc
    except apsw.Error as exc:
        raise _sqlite_failure(f"restore of {backup_file!r}", exc) from exc
    finally:
        source.close()
    return dict(proof, path=dest)
