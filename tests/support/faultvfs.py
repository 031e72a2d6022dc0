"""An APSW VFS over the default one that fails chosen file operations, as SQLite's own tests do.

``FaultVFS.plan(kind, nth, persistent=False, mode=...)`` makes the ``nth`` call (1-based, counted
from the plan) of ``kind`` (read, write, sync, truncate) fail: with an I/O error, a full disk, or a
short write (half the bytes reach the file, then "disk full"); persistently or once. ``counts``
tells how many operations of each kind a workload performs, so a sweep can cover all of them.
"""

from __future__ import annotations

import contextlib

import apsw

KINDS = ("read", "write", "sync", "truncate")


class FaultVFS(apsw.VFS):
    def __init__(self, name: str = "fgraph-fault"):
        self.vfs_name = name
        self.base = apsw.vfs_names()[0]  # the real default ("unix"), named so files never recurse into us
        super().__init__(name, self.base, makedefault=True)
        self.counts = dict.fromkeys(KINDS, 0)
        self.rule = None
        self.fired = 0

    def plan(self, kind: str | None = None, nth: int = 0, *, persistent: bool = False, mode: str = "io") -> None:
        self.counts = dict.fromkeys(KINDS, 0)
        self.fired = 0
        self.rule = None if kind is None else (kind, nth, persistent, mode)

    def tick(self, kind: str) -> str | None:
        """The failure mode to apply to this call, or None."""
        self.counts[kind] += 1
        if self.rule is None or self.rule[0] != kind:
            return None
        _, nth, persistent, mode = self.rule
        if self.counts[kind] == nth or (persistent and self.counts[kind] > nth):
            self.fired += 1
            return mode
        return None

    def xOpen(self, name, flags):
        return FaultFile(self, name, flags)


def _raise(mode: str):
    if mode == "full":
        raise apsw.FullError("disk full (injected)")
    raise apsw.IOError("I/O error (injected)")


class FaultFile(apsw.VFSFile):
    def __init__(self, vfs: FaultVFS, name, flags):
        self.vfs = vfs
        super().__init__(vfs.base, name, flags)

    def xRead(self, amount, offset):
        mode = self.vfs.tick("read")
        if mode:
            _raise(mode)
        return super().xRead(amount, offset)

    def xWrite(self, data, offset):
        mode = self.vfs.tick("write")
        if mode == "short":
            super().xWrite(bytes(data)[: len(data) // 2], offset)
            raise apsw.FullError("short write (injected)")
        if mode:
            _raise(mode)
        return super().xWrite(data, offset)

    def xSync(self, flags):
        mode = self.vfs.tick("sync")
        if mode:
            _raise(mode)
        return super().xSync(flags)

    def xTruncate(self, size):
        mode = self.vfs.tick("truncate")
        if mode:
            _raise(mode)
        return super().xTruncate(size)


@contextlib.contextmanager
def installed() -> "contextlib.AbstractContextManager[FaultVFS]":
    """A FaultVFS as SQLite's default for the duration (every new connection goes through it)."""
    vfs = FaultVFS()
    try:
        yield vfs
    finally:
        vfs.unregister()
