"""Making deleted bytes physically gone: secure delete, FTS optimise, VACUUM, WAL truncation.

Deleting a row only makes it unreachable: SQLite leaves the old cell bytes in the
page, the page on the freelist, the old page images in the WAL, and FTS5 keeps
the words in index segments until they are merged. ``scrub`` removes all four, and the
vector index files beside the database (``fgraph.query.search.vector_index``: copies of vectors).
When a reader holds the WAL open the final checkpoint cannot complete; that state
is recorded in a marker file beside the database (``<db>.scrub-pending``) which
``pending()`` reports and a later ``scrub`` clears.
"""

from __future__ import annotations

import json
import os
import time

import apsw

from fgraph.core.errors import FgraphError, rewrap
from fgraph.core.files import read_sidecar, refuse_unsafe_target, sweep_abandoned_temporaries, write_atomically
from fgraph.core.limits import MEMORY
from fgraph.core.sidecars import (
    SCRUB_FORMAT, SCRUB_MARKER, marker_document, not_ours, remove_marker, remove_vector_index_file, vector_index_files,
)
from fgraph.core.sqlite_errors import translate



def enable_secure_delete(conn) -> None:
    """Zero the bytes of deleted and overwritten cells and of freed pages."""
    conn.execute("PRAGMA secure_delete = ON")


def marker_path(path: str) -> str:
    return path + SCRUB_MARKER


def marker_record(raw: bytes) -> dict | None:
    """The marker's record when its content proves it is fgraph's: its format name, or the exact
    shape an earlier fgraph wrote (``{"since": …, "tx": …}`` alone); else None (decision S1)."""
    document = marker_document(raw, SCRUB_FORMAT)
    if document is not None:
        return document
    try:
        earlier = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if isinstance(earlier, dict) and set(earlier) == {"since", "tx"} \
            and (earlier["tx"] is None or type(earlier["tx"]) is int) \
            and type(earlier["since"]) in (int, float):
        return earlier
    return None


def _proven(raw: bytes) -> bool:
    return marker_record(raw) is not None


def owe(path: str, tx: int) -> None:
    """Record durably, before the erasing transaction commits, that its scrub is owed.

    Whatever stops the process after COMMIT (kill -9, power loss, a full disk during
    VACUUM), the marker survives: ``doctor`` reports it (exit 1) and ``doctor --repair``
    or a retry of the same excision finishes the scrub. A completed scrub removes it.
    Anything that keeps the marker from being written (a full disk, a directory or a link
    where it goes) is a typed error raised here, so the excision rolls back instead.
    """
    if path == MEMORY:
        return
    marker = marker_path(path)
    try:
        refuse_unsafe_target(marker, "scrub marker")
        sweep_abandoned_temporaries(marker)  # a marker write killed mid-way (kill -9) left its temporary
        existing = read_sidecar(marker, "scrub marker")
        if existing is not None:
            if not _proven(existing):   # not fgraph's (a backup put there?): never overwritten, never removed
                raise not_ours(marker, "scrub marker")
            return  # an older scrub is still owed: keep its transaction, the next scrub covers both
        _record(marker, tx)
    except FgraphError as exc:
        raise rewrap(exc, after="; the excision was rolled back, nothing was erased") from exc


def _record(marker: str, tx: int | None) -> None:
    write_atomically(marker, json.dumps({"fgraph": SCRUB_FORMAT, "since": time.time(), "tx": tx}).encode("utf-8"),
                     "scrub marker")


def forgive(path: str) -> None:
    """Remove the marker of an erasing transaction that rolled back: nothing was erased, nothing is owed."""
    remove_marker(marker_path(path), "scrub marker", _proven)


def pending(path: str) -> dict | None:
    """The unfinished scrub recorded for this database, if any. A marker that cannot be read still
    means a scrub may be owed: a damaged one is reported with ``tx`` None; something that is not
    fgraph's file at all (a directory, a FIFO, a link) also carries what is wrong in ``problem``."""
    if path == MEMORY:
        return None
    marker = marker_path(path)
    try:
        raw = read_sidecar(marker, "scrub marker")
    except FgraphError as exc:
        return {"tx": None, "problem": exc.message}
    if raw is None:
        return None
    record = marker_record(raw)
    if record is None:   # written atomically, so never torn: a file there that does not prove it is not ours
        return {"tx": None, "problem": not_ours(marker, "scrub marker").message}
    return record


def checkpoint_truncate(conn) -> tuple[bool, int]:
    """(completed, frames left): a TRUNCATE checkpoint that reports when readers block it."""
    try:
        busy, log, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except apsw.BusyError:
        return False, -1
    return busy == 0 and log in (0, -1) or (busy == 0 and log == done), max(log - done, 0)


def scrub(conn, path: str, tx: int | None) -> dict:
    """VACUUM and truncate the WAL after an erasing commit; returns what was done."""
    enable_secure_delete(conn)
    if path == MEMORY:
        return {"checkpoint": "not needed (in-memory database)", "complete": True, "fts_optimized": True,
                "secure_delete": True, "vacuumed": False}
    started = time.monotonic()
    first_ok = vacuumed = completed = False
    frames, failure = -1, None
    try:
        for derived in vector_index_files(path):   # copies of vectors: rebuilt by the next indexed search
            remove_vector_index_file(derived)
    except FgraphError as exc:
        failure = exc
    try:
        first_ok, _ = checkpoint_truncate(conn)
        vacuumed = True
        try:
            conn.execute("VACUUM")
        except apsw.BusyError:
            vacuumed = False
        completed, frames = checkpoint_truncate(conn)
    except apsw.Error as exc:
        # The erasing transaction has committed; what failed is only the physical clean-up
        # (a full disk during VACUUM, say). The owed-scrub marker stays, doctor reports it.
        failure = translate(exc) or exc
    completed = completed and vacuumed and failure is None
    marker = marker_path(path)
    # The erasing transaction has committed: a marker that cannot be updated is reported in
    # the state (and by doctor), never raised as if the excision had failed.
    if completed:
        try:
            remove_marker(marker, "scrub marker", _proven)
        except FgraphError as exc:
            completed, failure = False, exc
    if completed:
        state = "complete: the WAL was checkpointed and truncated"
    else:
        try:
            if tx is not None or not os.path.lexists(marker):  # a repair keeps the owed transaction
                _record(marker, tx)
        except FgraphError as exc:
            failure = failure or exc
        if failure is not None:
            reason = getattr(failure, "message", str(failure))
            state = (f"pending: the scrub could not finish ({reason}); erased bytes may remain until "
                     "`fgraph doctor --repair` runs with enough free space")
        else:
            state = (f"pending: another connection holds the WAL open ({frames} frames left); run "
                     "`fgraph doctor --repair` once readers are closed to finish the scrub")
    return {"checkpoint": state, "complete": completed, "fts_optimized": True, "secure_delete": True,
            "seconds": round(time.monotonic() - started, 3), "vacuumed": vacuumed,
            "first_checkpoint_complete": first_ok}
