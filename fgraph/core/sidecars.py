"""Every name fgraph gives a file beside a store, in one list, and the two rules that list serves
(issue 47 item 6, decision S1 in docs/reliability.md).

A store at ``DB`` has, beside it, SQLite's ``DB-journal``, ``DB-wal`` and ``DB-shm``, and fgraph's
own files: the scrub marker, the owed-excisions note, a sync target's cursor and lock, the
store's signing key and a target's pinned keys, the counts of ``info``, the vector index files
and the temporaries of an atomic write (``core.files.write_atomically``). A file that takes one of those names is read,
replaced or removed as part of that store, so:

- ``refuse_sidecar_name``: no new database, backup, restored copy or chain file takes the
  sidecar name of any store (a typed ``Conflict`` with the fix, before anything is written);
- ``remove_marker``: fgraph removes a marker or note only when its content proves it is
  fgraph's (each carries its format name); anything else there (a backup someone put there, an
  SQLite file) is left alone and reported.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable

from fgraph.core.errors import Conflict
from fgraph.core.files import SIDECAR_READ_LIMIT, os_failure, sweep_abandoned_temporaries

#: the names SQLite derives from a database path (its rollback journal, WAL and WAL index)
SQLITE_SIDECARS = {"-journal": "SQLite rollback journal", "-wal": "SQLite WAL", "-shm": "SQLite shared-memory index"}
SCRUB_MARKER = ".scrub-pending"       # fgraph.ops.scrub: an excision's scrub is owed
OWED_NOTE = ".excisions-owed"         # fgraph.ops.propagate: excisions received and not yet carried out
SYNC_CURSOR = ".sync.json"            # fgraph.bridges.sync.files: each source's position in a target
SYNC_LOCK = ".sync.lock"              # fgraph.bridges.sync.files: one syncer per target
SIGNING_KEY = ".signing-key"          # fgraph.bridges.sync.signing: the store's own signing key (issue 47 item 1)
SYNC_KEYS = ".sync-keys.json"         # fgraph.bridges.sync.trust: the keys a target pinned, per store
SYNC_PROVENANCE = ".sync-provenance"  # fgraph.bridges.sync.trust: which store brought which of a target's transactions
SYNC_QUARANTINE = ".sync-quarantine"  # fgraph.bridges.sync.quarantine: messages a target's consumer set aside
INFO_COUNTS = ".info-counts"         # fgraph.core.stats_cache: the counts of info at one basis (issue 52)
VECTOR_INDEX_INFIX = ".vectors-"      # DB.vectors-ATTR.usearch and .json: fgraph.query.search.vector_index

#: every fixed suffix a store's sidecar adds to its path, with what the file is
SUFFIXES: dict[str, str] = {
    **SQLITE_SIDECARS,
    SCRUB_MARKER: "scrub marker",
    OWED_NOTE: "owed-excisions note",
    SYNC_CURSOR: "sync cursor",
    SYNC_LOCK: "sync lock",
    SIGNING_KEY: "signing key",
    SYNC_KEYS: "pinned keys",
    SYNC_PROVENANCE: "sync provenance",
    SYNC_QUARANTINE: "sync quarantine",
    INFO_COUNTS: "info counts cache",
}
#: the sidecar names made with a number or a random part: (pattern of the name's end, what it is)
PATTERNS = (
    (re.compile(re.escape(VECTOR_INDEX_INFIX) + r"\d+\.(?:usearch|json)\Z"), "vector index file"),
)
#: a temporary of ``write_atomically``: ``.NAME.PID.HEX.tmp``, removed by the next write of NAME once PID is gone
TEMPORARY = re.compile(r"\A\.(.+)\.\d+\.[0-9a-f]+\.tmp\Z")

SCRUB_FORMAT = "fgraph-scrub-pending/1"
OWED_FORMAT = "fgraph-excisions-owed/1"
VECTOR_INDEX_FORMAT = "fgraph-vector-index/1"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def sidecar_role(path: str | os.PathLike[str]) -> tuple[str, str] | None:
    """(the store path it would belong to, what it would be) when ``path`` is named like a
    sidecar of some store, else None. A bare suffix (a file named ``-wal``) belongs to no store."""
    text = os.fspath(path)
    name = os.path.basename(text)
    for suffix, role in SUFFIXES.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return text[: -len(suffix)], role
    for pattern, role in PATTERNS:
        found = pattern.search(name)
        if found and found.start() > 0:
            return text[: len(text) - len(name) + found.start()], role
    temporary = TEMPORARY.match(name)
    if temporary:
        return os.path.join(os.path.dirname(text), temporary.group(1)), "temporary of an atomic write"
    return None


def refuse_sidecar_name(path: str | os.PathLike[str], what: str) -> None:
    """A new file named like a sidecar of any store would be read, replaced or removed as part of
    that store (SQLite rolls a -journal back into it; doctor --repair removes a finished marker;
    sync reads a cursor), so it is refused before anything is written."""
    found = sidecar_role(path)
    if found is None:
        return
    owner, role = found
    why = ("SQLite would take it for part of that database" if role.startswith("SQLite")
           else "fgraph would read, replace or remove it as that database's own")
    names = ", ".join([*SUFFIXES, f"{VECTOR_INDEX_INFIX}N.usearch/.json", ".NAME.PID.HEX.tmp"])
    raise Conflict(f"{what} {os.fspath(path)!r} is named like the {role} (of database {owner!r}); {why}",
                   f"choose a name that does not end in any of {names}")


def marker_document(raw: bytes, fmt: str, key: str = "fgraph") -> dict[str, object] | None:
    """The JSON object of a marker whose ``key`` names ``fmt``; None when the content does not prove it."""
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) and document.get(key) == fmt else None


def not_ours(path: str, what: str) -> Conflict:
    return Conflict(f"{path!r} is not fgraph's {what}: its content does not say so (a backup, an SQLite file, "
                    "a file of yours?), so it was left alone",
                    "move it elsewhere (fgraph never removes a file it did not write), then retry")


def remove_marker(path: str, what: str, proves: Callable[[bytes], bool]) -> None:
    """Remove the marker ``path`` when its content ``proves`` it is fgraph's; absent is fine.
    A link, a FIFO, a directory, a file too large to be a marker or one whose content does not
    prove it is left alone: a ``Conflict`` says so. The file removed is the one examined (a name
    swapped meanwhile is left alone too)."""
    sweep_abandoned_temporaries(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise not_ours(path, what) from None
        raise os_failure(exc, path, what, "read") from None
    try:
        examined = os.fstat(fd)
        if not stat.S_ISREG(examined.st_mode) or examined.st_size > SIDECAR_READ_LIMIT:
            raise not_ours(path, what)
        raw = os.read(fd, SIDECAR_READ_LIMIT + 1)
    except OSError as exc:
        raise os_failure(exc, path, what, "read") from None
    finally:
        os.close(fd)
    if len(raw) > SIDECAR_READ_LIMIT or not proves(raw):
        raise not_ours(path, what)
    try:
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) != (examined.st_dev, examined.st_ino):
            raise not_ours(path, what)
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise os_failure(exc, path, what, "removed") from None


def vector_index_files(db_path: str) -> list[str]:
    """The vector index files beside ``db_path`` (copies of vectors: ``scrub`` removes them), each
    index before its metadata, which is what proves the index is fgraph's."""
    directory, base = os.path.split(os.path.abspath(db_path))
    prefix = base + VECTOR_INDEX_INFIX
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    return sorted((os.path.join(directory, name) for name in names if name.startswith(prefix)
                   and name[len(prefix):].partition(".")[0].isdigit()
                   and name.endswith((".usearch", ".json"))), key=lambda p: (p.rpartition(".")[0], p.endswith(".json")))


def remove_vector_index_file(path: str) -> None:
    """Remove one vector index file: its metadata (``.json``) when it names fgraph's format, the
    index (``.usearch``) when the metadata beside it does."""
    stem, _, kind = path.rpartition(".")

    def proven_metadata(raw: bytes) -> bool:
        return marker_document(raw, VECTOR_INDEX_FORMAT, "format") is not None

    if kind == "json":
        remove_marker(path, "vector index metadata", proven_metadata)
        return
    try:
        with open(stem + ".json", "rb", opener=lambda p, f: os.open(p, f | _NOFOLLOW | _NONBLOCK)) as meta:
            beside = meta.read(SIDECAR_READ_LIMIT + 1)
    except OSError:
        beside = b""
    remove_marker(path, "vector index", lambda raw: proven_metadata(beside))
