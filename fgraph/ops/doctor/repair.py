"""Repair (spec 06 §3.1): rebuild the derived data and finish an owed excision scrub, in one
write transaction, and only when every problem found is repairable.

The decision reads ``Problem.repairable``, never a message's wording.
"""

from __future__ import annotations

import apsw

from fgraph.core.checks import is_strict_int
from fgraph.core.connection import open_connection
from fgraph.core.errors import FormatError, ReadOnly
from fgraph.core.limits import MEMORY
from fgraph.core.txn import write_transaction
from fgraph.ops import propagate, scrub
from fgraph.ops.doctor import derived
from fgraph.ops.doctor.checkup import diagnose
from fgraph.ops.doctor.digests import computed as computed_digests
from fgraph.ops.doctor.findings import Problem
from fgraph.ops.doctor.report import Diagnosis


def run(conn: apsw.Connection, repair: bool = False, *, expect_digest: str | None = None,
        second_handle=None, worker_path: str | None = None) -> Diagnosis:
    """``diagnose``, or with ``repair`` the repair in one write transaction, then the repaired diagnosis."""
    if not repair:
        return diagnose(conn, expect_digest=expect_digest, second_handle=second_handle, worker_path=worker_path)
    if conn.readonly("main") or conn.execute("PRAGMA query_only").fetchone()[0]:
        raise ReadOnly("doctor --repair needs a writable database", "open it writable (not read-only)")
    with write_transaction(conn):
        before = diagnose(conn)
        if before.fatal:
            raise FormatError(f"doctor found non-rebuildable format problems {[p.message for p in before.fatal]!r}",
                              "restore from a verified backup (`fgraph restore-backup`) or a snapshot")
        rebuilt, removed = derived.rebuild(conn)
        conn.execute("ANALYZE")
        after = diagnose(conn, expect_digest=expect_digest)
        if after.problems:
            raise FormatError(f"the repair did not leave a sound file {after.report['problems']!r}",
                              "restore from a verified backup")
    return after.with_figures(repaired=True, fts_rows_rebuilt=rebuilt, orphaned_blobs_removed=removed)


def examine(conn: apsw.Connection, path: str, repair: bool = False, *, expect_digest: str | None = None,
            digests: bool = False) -> Diagnosis:
    """``run`` for a database file: a repair first finishes an excision's owed scrub, and a scrub
    still owed afterwards is a repairable problem of the diagnosis. A plain check of a file on disk
    uses a second connection (or, for a large file, a second process) for SQLite's integrity check.
    With ``digests``, the logical and content digests are computed after the checks (``doctor --digests``)."""
    second_handle = worker_path = None
    if not repair and path != MEMORY:
        second_handle = lambda: open_connection(path, read_only=True)  # noqa: E731
        # A second process sees committed rows only: none while the caller holds a transaction.
        worker_path = path if conn.getautocommit() else None
    owed = scrub.pending(path)
    if owed is not None and _never_committed(conn, owed.get("tx")):
        owed = None  # killed between the marker and COMMIT: nothing was erased
        if repair:
            scrub.forgive(path)
    if repair and owed is not None:
        scrub.scrub(conn, path, None)
        owed = scrub.pending(path)
    diagnosis = run(conn, repair, expect_digest=expect_digest, second_handle=second_handle, worker_path=worker_path)
    if digests:
        diagnosis = diagnosis.with_figures(digests=computed_digests(conn))
    return owing_excisions(owing_scrub(diagnosis, owed), conn, path, repair, scrub_owed=owed is not None)


def owing_excisions(diagnosis: Diagnosis, conn: apsw.Connection, path: str, repair: bool, *,
                    scrub_owed: bool) -> Diagnosis:
    """An excision another store sent (sync) that this one noted and has not carried out and scrubbed."""
    entries = propagate.owed(path)
    if "problem" in entries:
        return diagnosis.with_problem(Problem(
            "excision_note", f"excisions may be owed, but their note cannot be read: {entries['problem']}",
            repairable=False))
    for origin, entry in sorted(entries.items()):
        done = conn.execute("SELECT 1 FROM fgraph_events WHERE operation_id = ?",
                            (propagate.operation_for(origin),)).fetchone() is not None
        if done and not scrub_owed:
            if repair:
                propagate.settle(path, origin)   # carried out and scrubbed: the note was left behind
            continue
        target = entry.get("target") if isinstance(entry, dict) else None
        source = entry.get("source") if isinstance(entry, dict) else None
        if done:
            message = (f"the excision of {propagate.dumps(target)} received from {source!r} (origin {origin}) "
                       "is carried out but its scrub is pending: erased bytes may remain")
        else:
            message = (f"the excision of {propagate.dumps(target)} received from {source!r} (origin {origin}) "
                       "was not carried out: the erased data may still be here; run the same `fgraph sync` "
                       "again to finish it")
        diagnosis = diagnosis.with_problem(Problem("excision_owed", message, repairable=done))
    return diagnosis


def _never_committed(conn: apsw.Connection, tx) -> bool:
    """A marker naming a transaction the file does not hold (a marker without a readable tx is kept)."""
    if not is_strict_int(tx):
        return False
    return conn.execute("SELECT 1 FROM fgraph_events WHERE tx = ?", (tx,)).fetchone() is None


def owing_scrub(diagnosis: Diagnosis, pending: dict | None) -> Diagnosis:
    """An excision whose on-disk scrub has not finished (a reader held the WAL, a crash) is repairable."""
    if pending is None:
        return diagnosis
    if pending.get("problem"):
        return diagnosis.with_problem(Problem(
            "scrub_marker", f"an excision scrub may be owed, but its marker cannot be read: {pending['problem']}",
            repairable=False))
    return diagnosis.with_problem(Problem(
        "scrub_pending", f"excision scrub pending since transaction {pending.get('tx')}: erased bytes may "
        "remain in the file or its WAL", repairable=True))
