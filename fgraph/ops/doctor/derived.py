"""The derived data doctor may rebuild in place: the full-text index and unreferenced blobs.

Both are functions of the live facts, so checking them is a set difference in SQL and
repairing them is a rebuild through the one writer (``fgraph.core.rows``). Problems found
here are the only repairable ones besides an owed excision scrub.
"""

from __future__ import annotations

from fgraph.core.rows import Rows

EXPECTED_FTS = ("SELECT f.id, CASE WHEN f.t = 4 THEN f.v ELSE b.data END FROM fgraph_facts f LEFT JOIN fgraph_blobs b "
                "ON f.t = 8 AND b.hash = f.v WHERE f.rx IS NULL AND f.t IN (4, 8)")
ORPHAN_FILTER = "hash NOT IN (SELECT v FROM fgraph_facts WHERE t IN (7, 8, 9))"


# Each side probes the other by id (fact ids are FTS rowids), so no temporary table of every text
# is built: memory stays flat however many text facts there are. ``IS`` compares like EXCEPT does
# (NULLs alike, a text never equal to a blob).
_LIVE_TEXT = ("FROM fgraph_facts f LEFT JOIN fgraph_blobs b ON f.t = 8 AND b.hash = f.v "
              "WHERE f.rx IS NULL AND f.t IN (4, 8)")
_TEXT_OF_F = "(CASE WHEN f.t = 4 THEN f.v ELSE b.data END)"
FTS_DRIFT = (f"SELECT (SELECT count(*) {_LIVE_TEXT} AND NOT EXISTS (SELECT 1 FROM fgraph_fts x WHERE x.rowid = f.id "
             f"AND x.text IS {_TEXT_OF_F})) + (SELECT count(*) FROM fgraph_fts x WHERE NOT EXISTS (SELECT 1 "
             f"{_LIVE_TEXT} AND f.id = x.rowid AND x.text IS {_TEXT_OF_F}))")


def check(c) -> None:
    """FTS rows equal the live text facts exactly; no blob is unreferenced."""
    c.figures["fts_rows"] = c.one("SELECT count(*) FROM fgraph_fts")[0]
    drift = c.one(FTS_DRIFT)[0]
    if drift or c.figures["fts_rows"] != c.figures["expected_fts_rows"]:
        c.findings.add("fts", "full-text index differs from live text facts", repairable=True)
    orphans = c.one(f"SELECT count(*) FROM fgraph_blobs WHERE {ORPHAN_FILTER}")[0]
    c.figures["orphaned_blobs"] = orphans
    if orphans:
        c.findings.add("orphaned_blobs", f"orphaned blobs: {orphans}", repairable=True)


def rebuild(conn) -> tuple[int, int]:
    """Inside the caller's write transaction: (full-text rows written, orphaned blobs removed)."""
    writer = Rows(conn)
    writer.clear_fts()
    writer.index_texts(f"{EXPECTED_FTS} ORDER BY f.id")
    rebuilt = conn.changes()
    writer.delete_blobs_where(ORPHAN_FILTER)
    return rebuilt, conn.changes()
