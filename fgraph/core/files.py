"""Files fgraph keeps beside a database (sync cursor and lock, scrub marker, backup copies): one
way to create, read, replace and remove them, so that none can be turned against the user.

- ``write_atomically`` never writes through a symbolic link, never onto a FIFO, a device or a
  directory, and never leaves a half-written file: the bytes go to a fresh, randomly named sibling
  created with ``O_EXCL | O_NOFOLLOW`` (a name planted in advance cannot be it), are fsynced, then
  renamed over the target, and the directory is fsynced so the rename survives a power cut. The
  sibling's name carries the writer's process id, so a temporary left by a writer killed mid-write
  (kill -9 cannot be cleaned up after) is removed by the next write of the same file.
- ``open_sidecar`` (a lock file) and ``read_sidecar`` never follow a link, never block on a FIFO
  and accept only a regular file; ``remove_sidecar`` removes a file or a link, nothing else.
- ``create_private``/``read_private``: a secret (a signing key), owner-only or refused;
  ``append_sidecar``/``read_sidecar_lines``: an append-only note, read back in bounded memory.
- which names are a store's sidecars, and when a marker may be removed, is ``fgraph.core.sidecars``' part.
- ``publish`` gives a finished copy (a backup, a restored backup) its name: fsynced first, then a
  hard link that never replaces anything (or, where asked, a rename over an empty regular file),
  then the directory fsynced. ``same_file`` says whether two paths name one file.

Every failure is a typed error naming the path and what to do; an ``OSError`` never escapes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from typing import BinaryIO

from fgraph.core.errors import Conflict, FgraphError, FormatError, ReadOnly, TooLarge

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: the largest sidecar fgraph reads (a cursor of many sources is a few KiB)
SIDECAR_READ_LIMIT = 1 << 20


def os_failure(exc: OSError, path: str, what: str, verb: str = "written") -> FgraphError:
    """The typed error for an OSError met on ``path``: a full disk, a permission, a link, a directory."""
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return TooLarge(f"the {what} {path!r} cannot be {verb}: {exc.strerror or 'the disk is full'}",
                        "free space (or raise the file size limit) and retry")
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ReadOnly(f"the {what} {path!r} cannot be {verb}: {exc.strerror}",
                        "check the permissions of the file and its directory")
    if code == errno.ELOOP:
        return Conflict(f"the {what} {path!r} is a symbolic link", "remove the link; fgraph never follows links there")
    if code in (errno.EISDIR, errno.ENOTDIR, errno.ENXIO):
        return Conflict(f"the {what} {path!r} is not a regular file", "remove it or choose another path")
    return FormatError(f"the {what} {path!r} cannot be {verb}: {exc.strerror or exc}",
                       "check the path, the disk and the permissions, then retry")


def write_all_and_sync(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write less than asked) and fsync it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(directory: str) -> None:
    """Make a rename or a link inside ``directory`` durable."""
    if os.name == "nt":  # pragma: no cover - directories cannot be fsynced there
        return
    fd = os.open(directory or ".", os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    return "not a regular file"


def _entry_mode(path: str, what: str) -> int | None:
    """The mode of ``path`` itself (a link is not followed), None when nothing is there."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_failure(exc, path, what, "examined") from None


def refuse_unsafe_target(path: str, what: str) -> None:
    """A file fgraph replaces must be absent or a regular file, not a link, FIFO, device or directory."""
    mode = _entry_mode(path, what)
    if mode is None:
        return
    if stat.S_ISLNK(mode):
        raise Conflict(f"{what} {path!r} is a symbolic link (to {os.readlink(path)!r})",
                       "remove the link; fgraph never writes through links")
    if not stat.S_ISREG(mode):
        raise Conflict(f"{what} {path!r} is {_kind(mode)}, not a regular file", "remove it or choose another path")


def _temporary_prefix(path: str) -> str:
    return f".{os.path.basename(path)}."


def _process_is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, but another user's
        return False
    return False


def sweep_abandoned_temporaries(path: str) -> list[str]:
    """Remove the temporaries of ``path`` whose writer process no longer exists (killed mid-write);
    a live writer's, links and anything not a regular file are left alone. Returns the names removed."""
    directory = os.path.dirname(os.path.abspath(path))
    prefix = _temporary_prefix(path)
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        owner = name[len(prefix):-len(".tmp")].split(".")[0]
        try:
            if not (owner.isdigit() and entry.is_file(follow_symlinks=False) and _process_is_gone(int(owner))):
                continue
            os.unlink(entry.path)
        except OSError:
            continue  # gone already, or not ours to remove: never a reason to fail the write
        removed.append(name)
    return removed


def write_atomically(path: str, data: bytes, what: str = "file") -> None:
    """Replace ``path`` with ``data``: readers see the old contents or the new, never a part."""
    refuse_unsafe_target(path, what)
    sweep_abandoned_temporaries(path)
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(directory, f"{_temporary_prefix(path)}{os.getpid()}.{os.urandom(6).hex()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
    except OSError as exc:
        raise os_failure(exc, path, what) from None
    try:
        try:
            write_all_and_sync(fd, data)
        finally:
            os.close(fd)
        refuse_unsafe_target(path, what)  # planted while we wrote: still never replace a link
        os.replace(temporary, path)
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise os_failure(exc, path, what) from None
        raise
    try:
        fsync_directory(directory)
    except OSError as exc:
        raise os_failure(exc, directory, f"directory of the {what}", "synced") from None


def same_file(a: str, b: str) -> bool:
    """True when two paths name one file (symbolic and hard links included); a path that cannot
    be examined names no file, so it is the same only as its own spelling."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def publish(scratch: str, destination: str, what: str, *, during: str, hint: str, onto_empty: bool = False,
            failure: Callable[[OSError], FgraphError] | None = None) -> None:
    """Give the finished file ``scratch`` (a sibling of ``destination``) the name ``destination``,
    durably: the file is fsynced, then hard-linked, which never replaces a name, whatever is there
    (a file, a link, a FIFO, a directory: a Conflict saying it appeared ``during`` the work, with
    ``hint``), then the directory is fsynced so the name survives a power cut. With
    ``onto_empty``, an empty regular file at ``destination`` (made to receive the copy) is
    replaced by a rename instead; anything else there is refused. ``scratch`` keeps its own name
    for the caller to remove. An OSError is raised as ``failure(exc)``, by default the error
    ``os_failure`` gives: a caller whose contract names one error for every failure passes its own."""
    try:
        fsync_file(scratch)
        try:
            there = os.lstat(destination) if onto_empty else None
        except FileNotFoundError:
            there = None
        if there is None:
            try:
                os.link(scratch, destination)
            except FileExistsError:
                raise Conflict(f"{what} {destination!r} appeared during {during}", hint) from None
        elif stat.S_ISREG(there.st_mode) and there.st_size == 0:
            os.replace(scratch, destination)
        else:
            now = "was written" if stat.S_ISREG(there.st_mode) else f"became {_kind(there.st_mode)}"
            raise Conflict(f"{what} {destination!r} {now} during {during}", hint)
        fsync_directory(os.path.dirname(os.path.abspath(destination)))
    except OSError as exc:
        raise (failure(exc) if failure is not None else os_failure(exc, destination, what, "published")) from exc


def open_sidecar(path: str, what: str) -> int:
    """A descriptor on the regular file ``path``, created when missing (for a lock): never through a
    link (a dangling one included, so nothing is created elsewhere), never a FIFO, device or directory."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise Conflict(f"the {what} {path!r} is a symbolic link",
                           "remove the link; fgraph never creates or locks a file through a link") from None
        raise os_failure(exc, path, what, "opened") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise Conflict(f"the {what} {path!r} is {_kind(mode)}, not a regular file", "remove it, then retry")
    return fd


def read_sidecar(path: str, what: str, limit: int = SIDECAR_READ_LIMIT) -> bytes | None:
    """The bytes of the regular file ``path``, None when it does not exist; a link, FIFO, device,
    directory or a file over ``limit`` is a typed error, and a FIFO never blocks the read."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise Conflict(f"the {what} {path!r} is a symbolic link",
                           "remove the link; fgraph never reads its files through links") from None
        raise os_failure(exc, path, what, "read") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Conflict(f"the {what} {path!r} is {_kind(info.st_mode)}, not a regular file",
                           "remove it, then retry")
        if info.st_size > limit:
            raise TooLarge(f"the {what} {path!r} is {info.st_size} bytes, more than fgraph ever writes there",
                           "remove it, then retry")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise TooLarge(f"the {what} {path!r} grew past {limit} bytes while it was read", "remove it, then retry")
        return b"".join(chunks)
    except OSError as exc:
        raise os_failure(exc, path, what, "read") from None
    finally:
        os.close(fd)


PRIVATE_MODE = 0o600   # a secret beside a database (a signing key): its owner alone reads it


def create_private(path: str, data: bytes, what: str) -> None:
    """Create ``path`` holding ``data``, owner-only, with ``O_EXCL | O_NOFOLLOW`` (a name taken by
    anything, a link included, is refused), fsynced with its directory; a failure leaves nothing."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, PRIVATE_MODE)
    except FileExistsError:
        if os.path.islink(path):
            raise Conflict(f"the {what} {path!r} is a symbolic link", "remove the link; fgraph never uses links there") from None
        raise Conflict(f"the {what} {path!r} appeared while it was being created",
                       "another process created it; retry, and fgraph reads it") from None
    except OSError as exc:
        raise os_failure(exc, path, what, "created") from None
    try:
        try:
            os.fchmod(fd, PRIVATE_MODE)   # a umask cannot widen it, but be explicit
            write_all_and_sync(fd, data)
        finally:
            os.close(fd)
        fsync_directory(os.path.dirname(os.path.abspath(path)))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise os_failure(exc, path, what, "created") from None


def read_private(path: str, what: str, limit: int = SIDECAR_READ_LIMIT) -> bytes | None:
    """``read_sidecar`` for a secret, also refused when group or others may use it or another user
    owns it (a key someone else could read or swap is no key of ours)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_failure(exc, path, what, "examined") from None
    if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
        raise ReadOnly(f"the {what} {path!r} may be read by others (mode {stat.S_IMODE(info.st_mode):o})",
                       f"restrict it to its owner (chmod 600 {path!r}) or, if others did read it, make a new key "
                       "and have every receiver accept it")
    if stat.S_ISREG(info.st_mode) and hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise ReadOnly(f"the {what} {path!r} belongs to another user (uid {info.st_uid})",
                       "use a key file of your own (it is created on first use)")
    return read_sidecar(path, what, limit)


def _open_regular(path: str, flags: int, what: str, verb: str) -> int | None:
    """A descriptor on the regular file ``path`` (None when missing and not created): never through
    a link, never blocking on a FIFO; anything but a regular file is a typed error."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise Conflict(f"the {what} {path!r} is a symbolic link", "remove the link; fgraph never uses links there") from None
        raise os_failure(exc, path, what, verb) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise Conflict(f"the {what} {path!r} is {_kind(mode)}, not a regular file", "remove it, then retry")
    return fd


def append_sidecar(path: str, data: bytes, what: str) -> None:
    """Append ``data`` to the regular file ``path`` (created when missing), durably."""
    fd = _open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, what, "written")
    assert fd is not None   # O_CREAT: a missing file is made
    try:
        write_all_and_sync(fd, data)
    except OSError as exc:
        raise os_failure(exc, path, what) from None
    finally:
        os.close(fd)


def read_sidecar_lines(path: str, what: str, line_limit: int = 4096) -> Iterator[bytes]:
    """The LF-terminated lines of the regular file ``path`` (none when it does not exist), streamed
    with bounded memory; a line over ``line_limit`` bytes is a ``FormatError``."""
    fd = _open_regular(path, os.O_RDONLY, what, "read")
    if fd is None:
        return
    with os.fdopen(fd, "rb") as handle:
        while line := handle.readline(line_limit + 1):
            if len(line) > line_limit:
                raise FormatError(f"the {what} {path!r} has a line longer than fgraph writes there",
                                  "remove it, then retry")
            yield line


def remove_sidecar(path: str, what: str) -> None:
    """Remove ``path`` when it is a file or a link (the link, never what it points to); absent is fine.
    Anything else (a directory, a FIFO, a device) was put there by someone else and is left alone."""
    sweep_abandoned_temporaries(path)
    mode = _entry_mode(path, what)
    if mode is None:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise Conflict(f"the {what} {path!r} is {_kind(mode)}, not fgraph's file", "remove it by hand, then retry")
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise os_failure(exc, path, what, "removed") from None


def open_regular_input(path: str, what: str = "input file", hint: str | None = None) -> BinaryIO:
    """A binary handle, for reading, on the regular file ``path`` that a user named as input (an
    import, a stream, a creds or CA file). A link is followed (the user chose the path), but what it
    names must be a regular file: a FIFO, a device (``/dev/zero`` never ends), a socket or a
    directory is refused at once with a ``FormatError`` and never blocks the open. Any other
    failure (missing, unreadable) is a ``FormatError`` naming the path; ``hint`` replaces the default hint."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        raise FormatError(f"the {what} {path!r} cannot be read ({exc.strerror or exc})",
                          "check the path and its permissions") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else _kind(mode)
        raise FormatError(f"the {what} {path!r} is {kind}, not a regular file",
                          hint or "name a regular file, or pipe the bytes in on stdin where the command takes '-'")
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def check_regular_file(path: str, what: str, hint: str | None = None) -> None:
    """Refuse at once, with ``open_regular_input``'s typed errors, a ``path`` that is missing,
    unreadable or not a regular file (a FIFO would hang whoever opens it next)."""
    open_regular_input(path, what, hint).close()
