"""The BLAKE3 digest of a stream's exact bytes (issue 35, decision R3 in docs/streams.md).

``fgraph review --digest`` prints ``blake3:<64 hex>`` of every byte of the file, line ends,
blank lines and a missing final LF included. ``fgraph apply --expect-digest`` reads the stream
through a ``DigestReader``: it hashes each line as apply reads it (the same pass, no second
read) and, when the stream is exhausted — still inside apply's write transaction — refuses a
digest that differs with ``Conflict``, so the whole apply rolls back and nothing is written.
"""

from __future__ import annotations

import re

import blake3

from fgraph.core.errors import Conflict, ValueTypeError

PREFIX = "blake3:"
_DIGEST = re.compile(r"^blake3:[0-9a-f]{64}\Z")
CHUNK = 1 << 20


def hasher():
    """A fresh BLAKE3 hasher (``update(bytes)``, ``hexdigest()``)."""
    return blake3.blake3()


def formatted(h) -> str:
    return PREFIX + h.hexdigest()


def parse_digest(text: str) -> str:
    """A digest as ``review --digest`` prints it (``blake3:`` and 64 lowercase hex digits)."""
    digest = text.strip().lower() if isinstance(text, str) else text
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise ValueTypeError(f"digest {text!r} is not blake3:<64 hex digits>",
                             "pass the digest exactly as `fgraph review --digest STREAM` printed it")
    return digest


def digest_of(handle) -> str:
    """The digest of everything ``handle`` (binary) still holds, read in 1 MiB chunks."""
    h = hasher()
    while True:
        chunk = handle.read(CHUNK)
        if not chunk:
            return formatted(h)
        h.update(chunk)


class DigestReader:
    """A binary line source for apply that hashes every byte it hands out; at the end of the
    stream it compares with ``expected`` (when given) and raises ``Conflict`` on a mismatch."""

    def __init__(self, handle, expected: str | None = None, *, what: str = "stream"):
        self._handle = handle
        self._hash = hasher()
        self.expected = None if expected is None else parse_digest(expected)
        self.what = what
        self.finished = False

    @property
    def name(self):
        return getattr(self._handle, "name", None)

    def fileno(self) -> int:
        return self._handle.fileno()

    def readline(self, limit: int = -1) -> bytes:
        line = self._handle.readline(limit)
        if line:
            self._hash.update(line)
        else:
            self.finish()
        return line

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        if data:
            self._hash.update(data)
        elif size != 0:
            self.finish()
        return data

    def digest(self) -> str:
        return formatted(self._hash)

    def finish(self) -> str:
        """The digest of all the bytes read; a mismatch with ``expected`` is a Conflict."""
        digest = self.digest()
        self.finished = True
        if self.expected is not None and digest != self.expected:
            raise Conflict(f"the {self.what}'s bytes have digest {digest}, not the reviewed {self.expected}; "
                           "nothing was applied",
                           "review the stream again (`fgraph review STREAM`) and apply the bytes you reviewed")
        return digest
