"""The pending proposals file: proposal/1 lines appended by proposing servers, rewritten by a
decision (issue 51, docs/proposals.md P2).

Every append and every rewrite happens under an exclusive advisory lock on ``<FILE>.lock``, so
two proposing servers and a person deciding interleave whole lines. An append is one ``os.write``
with ``O_APPEND`` of one canonical line; a failed or short write is cut back to the line before,
so the file never keeps a torn line of ours. The file (and its lock) is never a link, a FIFO or a
directory, and a read-only file is a ``ReadOnly`` error, not a silent loss.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from collections.abc import Iterator

from fgraph.bridges.proposals import records as _records
from fgraph.core.errors import Conflict, FormatError, ReadOnly, TooLarge
from fgraph.core.files import open_sidecar, os_failure, write_atomically
from fgraph.core.limits import MAX_PROPOSAL_LINE_BYTES, MAX_PROPOSALS, MAX_PROPOSALS_FILE_BYTES, PROPOSALS_LOCK_SECONDS

LOCK_SUFFIX = ".lock"
WHAT = "proposals file"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_POLL_FIRST, _POLL_MOST = 0.002, 0.05


class ProposalFile:
    """The pending proposals file at ``path``. ``lock()`` nests within one object (a proposer holds
    it around its planning and its append); one object may be shared by threads."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.lock_path = self.path + LOCK_SUFFIX
        self._mutex = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    # -- the lock ---------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, timeout: float = PROPOSALS_LOCK_SECONDS) -> Iterator[None]:
        """Hold the exclusive lock of the file, waiting at most ``timeout`` seconds for it."""
        deadline = time.monotonic() + timeout
        if not self._mutex.acquire(timeout=max(timeout, 0.0)):
            raise self._busy(timeout)
        try:
            if self._depth == 0:
                self._fd = self._take(deadline, timeout)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    os.close(self._fd)   # closing the descriptor releases the lock
                    self._fd = None
        finally:
            self._mutex.release()

    def _take(self, deadline: float, timeout: float) -> int:
        import fcntl
        fd = open_sidecar(self.lock_path, "proposals lock")
        pause = _POLL_FIRST
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise self._busy(timeout) from None
                    time.sleep(min(pause, left))
                    pause = min(pause * 2, _POLL_MOST)
        except BaseException:
            os.close(fd)
            raise

    def _busy(self, timeout: float) -> Conflict:
        return Conflict(f"the {WHAT} {self.path!r} stayed busy for {timeout:g} s (another proposing server or a "
                        f"`fgraph proposals` decision holds {self.lock_path!r})",
                        "wait for that decision or proposal to finish, then retry")

    # -- appending --------------------------------------------------------------
    def append(self, record: dict, *, sync: bool = True) -> None:
        """Append ``record`` as one line, under the lock; the file is created when missing.
        ``sync``: fsync the file before returning (the proposal survives a power cut)."""
        line = _records.encode(record)
        if len(line) > MAX_PROPOSAL_LINE_BYTES + 1:
            raise TooLarge(f"the proposal is over {MAX_PROPOSAL_LINE_BYTES} bytes", "propose a smaller change")
        with self.lock():
            fd = self._open(os.O_RDWR | os.O_APPEND | os.O_CREAT, "written")
            try:
                if not os.fstat(fd).st_mode & 0o222:   # marked read-only: refused even where root could write
                    raise ReadOnly(f"the {WHAT} {self.path!r} is marked read-only (no write permission)",
                                   f"make it writable (chmod u+w {self.path!r}) or name another file; nothing "
                                   "was proposed")
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    raise self._torn()
                if size + len(line) > MAX_PROPOSALS_FILE_BYTES:
                    raise TooLarge(f"the {WHAT} {self.path!r} would grow past {MAX_PROPOSALS_FILE_BYTES} bytes",
                                   "ask a person to decide the pending proposals (`fgraph proposals accept|reject`)")
                try:
                    written = os.write(fd, line)
                    if written != len(line):
                        raise OSError(errno.ENOSPC, "short write")
                    if sync:
                        os.fsync(fd)
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, size)   # never leave a torn line: under the lock the end is ours
                    raise os_failure(exc, self.path, WHAT) from None
            finally:
                os.close(fd)

    def _open(self, flags: int, verb: str, *, missing_ok: bool = False):
        try:
            fd = os.open(self.path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644)
        except FileNotFoundError:
            if missing_ok:
                return None
            raise FormatError(f"the {WHAT} {self.path!r} cannot be {verb}: its directory does not exist",
                              "create the directory or name another file") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP or os.path.islink(self.path):
                raise Conflict(f"the {WHAT} {self.path!r} is a symbolic link",
                               "remove the link and name the file itself; fgraph never writes proposals "
                               "through a link") from None
            if exc.errno == errno.ENXIO:   # a FIFO with no reader, opened for writing
                raise Conflict(f"the {WHAT} {self.path!r} is a FIFO (named pipe), not a regular file",
                               "remove it or choose another path") from None
            error = os_failure(exc, self.path, WHAT, verb)
            if isinstance(error, ReadOnly):
                error.hint = (f"make {self.path!r} writable (chmod u+w) or name another file with --propose; "
                              "nothing was proposed")
            raise error from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
                    else "not a regular file")
            raise Conflict(f"the {WHAT} {self.path!r} is {kind}, not a regular file",
                           "remove it or choose another path")
        return fd

    def _torn(self) -> FormatError:
        return FormatError(f"the {WHAT} {self.path!r} ends in a partial line (edited by hand, or cut by a full disk)",
                           "complete or remove its last line (`fgraph proposals list FILE` names the line), then retry")

    # -- reading ----------------------------------------------------------------
    def stamp(self) -> tuple[int, int]:
        """(inode, size) of the file, (0, 0) when it does not exist: a cheap change detector (a
        rewrite changes the inode, an append the size)."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return (0, 0)
        except OSError as exc:
            raise os_failure(exc, self.path, WHAT, "examined") from None
        return (info.st_ino, info.st_size)

    def records(self) -> list[dict]:
        """Every pending record, in file order (none when the file does not exist)."""
        return self.records_after(0)[0]

    def records_after(self, offset: int) -> tuple[list[dict], int]:
        """The records of the lines that start at or after byte ``offset`` (a line boundary, e.g. the
        size of a previous ``stamp``), and the offset after the last complete line read. A final
        line without its LF is an append in progress by no one (appends are whole lines): an error."""
        fd = self._open(os.O_RDONLY, "read", missing_ok=True)
        if fd is None:
            if offset:
                raise Conflict(f"the {WHAT} {self.path!r} was removed", "read it again from the start")
            return [], 0
        try:
            size = os.fstat(fd).st_size
            if size > MAX_PROPOSALS_FILE_BYTES:
                raise TooLarge(f"the {WHAT} {self.path!r} is {size} bytes, more than {MAX_PROPOSALS_FILE_BYTES}",
                               "decide some proposals, or move the file aside and propose again")
            if offset > size:
                raise Conflict(f"the {WHAT} {self.path!r} shrank below offset {offset}",
                               "it was rewritten: read it again from the start")
            data = _read_exactly(fd, offset, size - offset)
        except OSError as exc:
            raise os_failure(exc, self.path, WHAT, "read") from None
        finally:
            os.close(fd)
        if data and not data.endswith(b"\n"):
            raise self._torn()
        found: list[dict] = []
        for number, line in enumerate(data.split(b"\n")[:-1] if data else [], start=1):   # counted from offset
            if not line.strip(b" \t\r"):
                continue
            found.append(_records.decode(line, number))
            if len(found) > MAX_PROPOSALS:
                raise TooLarge(f"the {WHAT} {self.path!r} holds more than {MAX_PROPOSALS} proposals",
                               "decide some of them (`fgraph proposals accept|reject`) before proposing more")
        return found, offset + len(data)

    # -- rewriting --------------------------------------------------------------
    def replace(self, records: list[dict]) -> None:
        """Rewrite the file to hold exactly ``records`` (atomically, under the lock)."""
        data = b"".join(_records.encode(r) for r in records)
        with self.lock():
            self.check_writable()
            write_atomically(self.path, data, WHAT)

    def check_writable(self) -> None:
        """A typed error unless the file may be rewritten: absent, or a regular file not marked
        read-only (a rename would replace a read-only file; the mark is respected instead)."""
        fd = self._open(os.O_RDONLY, "read", missing_ok=True)
        if fd is None:
            return
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        if not mode & 0o222:
            raise ReadOnly(f"the {WHAT} {self.path!r} is marked read-only (no write permission)",
                           f"make it writable (chmod u+w {self.path!r}) to decide its proposals; nothing was decided")


def _read_exactly(fd: int, offset: int, length: int) -> bytes:
    chunks, at, left = [], offset, length
    while left > 0:
        chunk = os.pread(fd, min(left, 1 << 20), at)
        if not chunk:
            break
        chunks.append(chunk)
        at += len(chunk)
        left -= len(chunk)
    return b"".join(chunks)
