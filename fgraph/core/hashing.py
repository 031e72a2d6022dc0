"""SHA-256 and SHA-1 for the write path, with hashlib imported on first use.

Loading hashlib initialises OpenSSL, about 4 ms of every start on this machine; reads (``fgraph
info``, ``get``, a query) never hash, so they do not pay for it (benchmarks/startup.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import hashlib


def sha256(data: bytes = b"") -> hashlib._Hash:
    """A hashlib SHA-256 object fed ``data`` (``.update()`` and ``.digest()`` as usual)."""
    import hashlib
    return hashlib.sha256(data)


def sha1(data: bytes = b"") -> hashlib._Hash:
    """A hashlib SHA-1 object fed ``data`` (name-based UUIDs, RFC 4122 version 5)."""
    import hashlib
    return hashlib.sha1(data)
