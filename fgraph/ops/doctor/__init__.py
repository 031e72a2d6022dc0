"""doctor: every invariant of format v2, checked read-only in linear time (spec 06 §3, 01 §9).

Split by job:

- ``physical`` — SQLite's integrity check, markers and objects, each fact row, value and blob;
- ``logical`` — identity registry, transactions, genesis, attributes, schema, shapes;
- ``payloads`` — the event log: canonical payloads, redactions, created lists, and facts
  agreeing with their events;
- ``derived`` — the repairable derived data (full-text index, orphaned blobs);
- ``checkup`` — one pass running them in order; ``repair`` — the repair transaction and the
  owed excision scrub; ``findings`` / ``report`` — problems as records and the report.

``check(conn)`` returns the 13-key report of spec 06 §3; ``diagnose`` returns the same as a
``Diagnosis`` whose problems are records (kind, message, repairable). ``examine`` is what
``fgraph doctor`` runs on a file.
"""

from fgraph.ops.doctor.checkup import check, diagnose, normalise_digest
from fgraph.ops.doctor.findings import MAX_LINES, Problem
from fgraph.ops.doctor.repair import examine, owing_scrub, run
from fgraph.ops.doctor.report import REPORT_KEYS, Diagnosis

__all__ = ["MAX_LINES", "REPORT_KEYS", "Diagnosis", "Problem", "check", "diagnose", "examine", "normalise_digest",
           "owing_scrub", "run"]
