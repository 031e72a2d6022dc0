"""One doctor pass: every check of spec 06 §3.3, in its order, over one read transaction.

``diagnose(conn)`` works on any handle: read-only, immutable, or inside the caller's open
write transaction (restore runs it before COMMIT). The checks live by job in ``physical``,
``logical``, ``payloads`` and ``derived``; each is a function of the ``Checkup`` below, which
carries the connection, the findings and what one check hands the next.

Cost: a few set-based SQL passes (full scans, GROUP BY over existing indexes, EXCEPT) and one
streaming Python pass over the event payloads. No per-fact round trips.
"""

from __future__ import annotations

import re

import apsw

from fgraph.core.errors import ValueTypeError
from fgraph.core.txn import read_transaction
from fgraph.ops.doctor import derived, logical, payloads, physical
from fgraph.ops.doctor.findings import Findings
from fgraph.ops.doctor.report import Diagnosis
from fgraph.ops.doctor.worker import CheckWorker, worth_it
from fgraph.streams.snapshot import logical_digest

# After the physical layout is known good, in the order of spec 06 §3.3.
CHECKS = (logical.identities, physical.fact_rows, logical.transactions, payloads.events, logical.genesis,
          logical.attributes, physical.value_forms, physical.blobs, logical.schema, logical.shapes,
          payloads.agreement, derived.check)


class Checkup:
    """State of one pass: the connection, the findings, the report's figures, and hand-overs
    between checks (``meta``, ``attr_groups``, the fact scan's counts)."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn
        self.q = conn.execute
        self.findings = Findings()
        self.figures = {"expected_fts_rows": 0, "fts_rows": 0, "fts_rows_rebuilt": 0, "integrity": "ok",
                        "orphaned_blobs": 0, "orphaned_blobs_removed": 0, "repaired": False, "schema_problems": 0,
                        "shape_violations": 0, "unverifiable_event_hashes": 0}
        self.meta: dict = {}
        self.attr_groups: list = []
        self.disagreeing_facts = 0  # counted by the event pass, reported in the agreement check's place
        self.worker = None  # runs the asserting walk and integrity check when set (``walks_asserted``)
        self.first_asserted = self.first_retracted = None  # (fact id, attribute) of each walk's first
        self.missing_blobs = self.bad_tags = self.bad_values = 0
        physical.register_functions(conn)

    def one(self, sql: str, args=()):
        return self.q(sql, args).fetchone()

    def run(self, expect_digest: str | None, parallel) -> Diagnosis:
        """``parallel``: an ``IntegrityThread``, or a worker already started that also walks the
        asserted facts (``walks_asserted``: a ``CheckWorker``, backup's ``DigestWorker``), or None."""
        self.worker = parallel if getattr(parallel, "walks_asserted", False) else None
        if parallel is None:
            physical.integrity(self, physical.integrity_rows(self.conn))
        if physical.markers_and_objects(self):
            try:
                for check in CHECKS:
                    check(self)
                if expect_digest is not None:
                    self.digest(expect_digest)
            except apsw.Error as exc:
                self.findings.add("unreadable", f"checks stopped: SQLite could not read the file ({exc})")
            except UnicodeDecodeError as exc:  # a damaged page: SQLite returned text that is not UTF-8
                self.findings.add("unreadable", f"checks stopped: a stored text is not valid UTF-8 (byte "
                                  f"{exc.start} of a {len(exc.object)}-byte string), a page of the file is damaged")
        self.findings.close()
        if parallel is not None:
            rows = self.worker.integrity() if self.worker is not None else parallel.result()
            physical.integrity(self, rows if rows is not None else physical.integrity_rows(self.conn))
        return Diagnosis(dict(self.figures), tuple(self.findings.problems))

    def digest(self, expected: str) -> None:
        found = logical_digest(self.conn)
        if found != expected:
            latest = self.one("SELECT max(tx) FROM fgraph_events")[0]
            self.findings.add("digest", f"logical digest differs: expected {expected}, found {found} "
                              f"at basis tx {latest}")


def normalise_digest(digest) -> str:
    text = digest.lower().removeprefix("sha256:") if isinstance(digest, str) else ""
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise ValueTypeError(f"expected digest {digest!r} is not 64 hex digits",
                             "pass the digest printed by `fgraph backup` or `fgraph info --digest`")
    return text


def diagnose(conn: apsw.Connection, *, expect_digest: str | None = None, second_handle=None,
             worker_path: str | None = None, parallel=None) -> Diagnosis:
    """One read-only pass, in the caller's transaction or in one read transaction of its own.

    ``second_handle``: a callable opening another read-only connection to the same file; the
    physical integrity check then runs on it in a thread while the logical checks run here.
    ``worker_path``: the file's path; when the file is large, a second process (``worker``)
    runs the integrity check and the asserting half of the agreement walk instead.
    ``parallel``: checks already running elsewhere, which the caller stops: an integrity check
    (``result()`` gives its rows or None, then it runs here), or a worker that also walks the
    asserted facts (``walks_asserted``: ``integrity()`` and ``asserted()``), e.g. backup's.
    """
    expected = None if expect_digest is None else normalise_digest(expect_digest)
    with read_transaction(conn):
        started = None
        if parallel is None and worker_path is not None and second_handle is not None and worth_it(worker_path):
            started = CheckWorker(worker_path)
            started.start()
        elif parallel is None and second_handle is not None:
            started = physical.IntegrityThread(second_handle)
            started.start()
        try:
            return Checkup(conn).run(expected, parallel if started is None else started)
        finally:
            if isinstance(started, CheckWorker):
                started.stop()
            elif started is not None:
                started.join()


def check(conn: apsw.Connection, *, expect_digest: str | None = None, second_handle=None,
          worker_path: str | None = None, parallel=None) -> dict:
    """The 13-key report of ``diagnose``."""
    return diagnose(conn, expect_digest=expect_digest, second_handle=second_handle,
                    worker_path=worker_path, parallel=parallel).report
