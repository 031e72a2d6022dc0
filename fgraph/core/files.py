"""Files fgraph writes beside a database (sync cursor, scrub marker, backup copies): one way to
write them, so that none can be turned against the user.

``write_atomically`` never writes through a symbolic link, never onto a FIFO, a device or a
directory, and never leaves a half-written file: the bytes go to a fresh, randomly named sibling
created with ``O_EXCL | O_NOFOLLOW`` (a name planted in advance cannot be it), are fsynced, then
renamed over the target, and the directory is fsynced so the rename survives a power cut.
"""

from __future__ import annotations

import os
import secrets
import stat

from fgraph.core.errors import Conflict

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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


def refuse_unsafe_target(path: str, what: str) -> None:
    """A file fgraph replaces must be absent or a regular file, not a link, FIFO, device or directory."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise Conflict(f"{what} {path!r} is a symbolic link (to {os.readlink(path)!r})",
                       "remove the link; fgraph never writes through links")
    if not stat.S_ISREG(mode):
        raise Conflict(f"{what} {path!r} is not a regular file", "remove it or choose another path")


def write_atomically(path: str, data: bytes, what: str = "file") -> None:
    """Replace ``path`` with ``data``: readers see the old contents or the new, never a part."""
    refuse_unsafe_target(path, what)
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        refuse_unsafe_target(path, what)  # planted while we wrote: still never replace a link
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    fsync_directory(directory)
