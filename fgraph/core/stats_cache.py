"""The counts of ``info`` kept beside the database (issue 52 item 2; decision I1 in docs/cli.md),
so that ``info`` at a million transactions reads what changed since it last counted, not history.

``DB.info-counts`` holds the six counts of ``fgraph.core.stats`` at one basis, with what proves
which database and which history they describe: the store's creation time and genesis event
hash, the database file's device and inode, the basis transaction and its event UUID and hash,
and a BLAKE3 digest over all of it. A call at a later basis brings the counts forward by reading only
the transactions since (their events, and index ranges over their facts, identities and
retractions), and only when every one of them is a plain event/1 record whose retractions all
ended a row (an excision, a redacted stub or a nohistory deletion changes history before the
basis: the counts are then taken anew). Anything else — no file, a link, a FIFO, a directory, a
file too large, unreadable, damaged, of another database or of another history, a basis later than
this view's, more than ``CATCH_UP_EVENTS`` events behind — is ignored and the counts are taken
from the indexes as before. Counts taken anew, or brought forward over ``REWRITE_EVENTS`` or more
transactions, at the latest basis are written back atomically (``fgraph.core.files.write_atomically``: never through a link, never a half file), and
only when the database file and its directory are writable (by permission and by their mode bits):
a read-only database or directory answers the same figures and writes nothing.

What the cache cannot prove is its own numbers: a file written with the right identity and a
recomputed checksum by someone able to write beside the database is believed, as SQLite believes
the ``-wal`` file there (which can change every row). The cache is no weaker than its neighbours.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from fgraph.core import files, sidecars
from fgraph.core.canonical import loads
from fgraph.core.errors import FgraphError
from fgraph.core.limits import EVENT_KEYS, GENESIS_TX
from fgraph.core.payload import payload_bytes, verified_text

if TYPE_CHECKING:
    import apsw

FORMAT = "fgraph-info-counts/1"
COUNTS = ("attributes", "blobs", "facts", "ids", "retracted", "transactions")
CATCH_UP_EVENTS = 20_000   # events past the cache's basis read before counting anew is cheaper
REWRITE_EVENTS = 64        # events past the cache's basis that make a call write the file anew
READ_LIMIT = 4096
WRITING = 2   # SQLITE_TXN_WRITE: inside a write transaction (a speculation), whose counts may be rolled back

Counts = dict[str, int]
Fresh = Callable[[], Counts]
Delta = Callable[[int, int], Counts]


def path_of(db_path: str) -> str:
    return db_path + sidecars.INFO_COUNTS


def counts_at(conn: apsw.Connection, basis: int, fresh: Fresh, delta: Delta) -> Counts:
    """The counts at ``basis``: the cache's brought forward by ``delta(since, basis)`` when it
    proves it covers this database's history up to ``since <= basis``, else ``fresh()``; kept
    beside the database when ``basis`` is the latest and the file may be written."""
    db_path = conn.db_filename("main")
    if not db_path:
        return fresh()
    identity = _identity(conn, db_path)
    if identity is None:
        return fresh()
    cache = path_of(db_path)
    document = _read(cache, identity)
    counts = None
    if document is not None and document["basis"] <= basis \
            and document["basis_event"] == _event_of(conn, document["basis"]):
        since = document["basis"]
        if since == basis:
            return {k: document["counts"][k] for k in COUNTS}
        behind = _plain_history(conn, since, basis)
        if behind is not None:
            step = delta(since, basis)
            counts = {k: document["counts"][k] + step[k] for k in COUNTS}
            if behind < REWRITE_EVENTS:
                return counts     # a few events to read again next time cost less than a write and its fsyncs
    if counts is None:
        counts = fresh()
    if basis == _latest(conn) and conn.txn_state("main") != WRITING and _writable(db_path) \
            and _writable(os.path.dirname(os.path.abspath(db_path))):   # never counts not yet committed
        _write(cache, identity, basis, _event_of(conn, basis), counts)
    return counts


def _writable(path: str) -> bool:
    """Whether ``path`` may be written: by permission, and by its mode bits, which say what its
    owner wants even of a process that may write anything (root)."""
    try:
        return os.access(path, os.W_OK) and bool(os.stat(path).st_mode & 0o222)
    except OSError:
        return False


def _identity(conn: apsw.Connection, db_path: str) -> dict[str, object] | None:
    try:
        info = os.stat(db_path)
    except OSError:
        return None
    row = conn.execute("SELECT (SELECT value FROM fgraph_meta WHERE key = 'created_at'), "
                       "(SELECT hex(event_hash) FROM fgraph_events WHERE tx = ?)", (GENESIS_TX,)).fetchone()
    if row is None or row[0] is None or row[1] is None:
        return None
    return {"created_at": str(row[0]), "genesis": row[1], "file": [info.st_dev, info.st_ino]}


def _event_of(conn: apsw.Connection, tx: int) -> list[str] | None:
    row = conn.execute("SELECT hex(i.gid), hex(e.event_hash) FROM fgraph_events AS e JOIN fgraph_ids AS i "
                       "ON i.id = e.tx WHERE e.tx = ?", (tx,)).fetchone()
    return [row[0], row[1]] if row else None


def _latest(conn: apsw.Connection) -> int:
    latest: int = conn.execute("SELECT max(tx) FROM fgraph_events").fetchone()[0]  # type: ignore[index]
    return latest


def checksum(body: dict[str, object]) -> str:
    from blake3 import blake3  # not hashlib: a read loads no OpenSSL (fgraph/core/hashing.py)
    return blake3(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _read(cache: str, identity: dict[str, object]) -> dict[str, Any] | None:
    """The cache's document when it is a regular file of this format, intact, naming this
    database; None for anything else (nothing is raised: ``info`` answers from the indexes)."""
    try:
        before = os.lstat(cache)
        if not stat.S_ISREG(before.st_mode):
            return None            # a link, FIFO, directory: not ours, never followed or opened
        raw = files.read_sidecar(cache, "info counts cache", READ_LIMIT)
    except (OSError, FgraphError):
        return None
    if raw is None:
        return None
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return None
    body = {k: v for k, v in document.items() if k != "checksum"}
    counts = document.get("counts")
    if document.get("checksum") != checksum(body) or document.get("store") != identity \
            or not isinstance(counts, dict) or set(counts) != set(COUNTS) \
            or not all(type(counts[k]) is int and counts[k] >= 0 for k in COUNTS) \
            or type(document.get("basis")) is not int:
        return None
    return document


def _write(cache: str, identity: dict[str, object], basis: int, event: list[str] | None, counts: Counts) -> None:
    body: dict[str, object] = {"basis": basis, "basis_event": event, "counts": counts, "format": FORMAT,
                               "store": identity}
    data = orjson.dumps({**body, "checksum": checksum(body)}, option=orjson.OPT_SORT_KEYS)
    try:
        files.write_atomically(cache, data, "info counts cache")
    except FgraphError:
        pass   # a read-only directory, or something not a file in the cache's place: answer without it


def _plain_history(conn: apsw.Connection, since: int, basis: int) -> int | None:
    """The number of transactions in (since, basis] when they changed nothing at or before
    ``since`` — each is a verified plain event/1 record, and the rows they ended all still exist
    (a nohistory retraction deletes its row, an excision deletes rows and redacts events) — else None."""
    (events,) = conn.execute("SELECT count(*) FROM fgraph_events WHERE tx > ? AND tx <= ?",
                             (since, basis)).fetchone()  # type: ignore[misc]
    if events > CATCH_UP_EVENTS:
        return None
    listed = 0
    try:
        for tx, data, event_hash in conn.execute(
                f"SELECT tx, {payload_bytes()}, event_hash FROM fgraph_events WHERE tx > ? AND tx <= ? ORDER BY tx",
                (since, basis)):
            text = verified_text(tx, data, event_hash)
            if text is None:
                return None
            record = loads(text)
            if not isinstance(record, dict) or set(record) - EVENT_KEYS or not isinstance(record.get("retracted"), list):
                return None
            listed += len(record["retracted"])
    except (FgraphError, ValueError):
        return None
    (ended,) = conn.execute("SELECT count(*) FROM fgraph_facts INDEXED BY fgraph_txout WHERE rx > ? AND rx <= ?",
                            (since, basis)).fetchone()  # type: ignore[misc]
    return events if ended == listed else None
