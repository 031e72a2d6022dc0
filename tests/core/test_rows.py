"""Proves the one writer (fgraph/core/rows.py): it is the only module that writes fgraph's rows,
and each of its writes keeps facts, FTS rows and blobs consistent (doctor stays clean)."""

from __future__ import annotations

import pathlib
import re

import fgraph
from fgraph.core import values
from fgraph.core.rows import Rows, event_hash
from fgraph.core.txn import write_transaction

PACKAGE = pathlib.Path(fgraph.__file__).parent
WRITE_SQL = re.compile(r"(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM)\s+fgraph_(facts|fts|blobs|ids|events|meta)\b")


def test_only_rows_writes_fgraph_tables():
    writers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if WRITE_SQL.search(p.read_text()))
    assert writers == ["core/rows.py"]


def test_fact_indexes_text_and_stores_indirect_blobs():
    db = fgraph.connect(":memory:")
    try:
        conn = db.connection
        long_text = values.from_wire("x" * 300)
        with write_transaction(conn):
            rows = Rows(conn)
            short = rows.fact(65, 8, "findme", values.TAG_TEXT, None, 64)
            long = rows.fact(65, 10, long_text.v, long_text.t, long_text.blob, 64)
            ended = rows.fact(65, 10, "gone", values.TAG_TEXT, None, 64, rx=66)
        assert conn.execute("SELECT rowid FROM fgraph_fts WHERE fgraph_fts MATCH 'findme'").fetchall() == [(short,)]
        assert conn.execute("SELECT count(*) FROM fgraph_fts WHERE rowid = ?", (long,)).fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM fgraph_fts WHERE rowid = ?", (ended,)).fetchone() == (0,)
        assert conn.execute("SELECT data FROM fgraph_blobs WHERE hash = ?", (long_text.v,)).fetchone() == (long_text.blob,)
    finally:
        db.close()


def test_retract_deletes_or_ends_and_frees_unreferenced_blobs():
    db = fgraph.connect(":memory:")
    try:
        conn = db.connection
        blob = values.from_wire({"bytes": "eHh4" * 100})
        with write_transaction(conn):
            rows = Rows(conn)
            kept = rows.fact(65, 8, "text", values.TAG_TEXT, None, 64)
            dropped = rows.fact(65, 9, blob.v, blob.t, blob.blob, 64)
            assert rows.retract(kept, "text", values.TAG_TEXT, 66, delete=False) is None
            freed = rows.retract(dropped, blob.v, blob.t, 66, delete=True)
            assert freed == blob.v
            rows.free_blobs([freed])
        assert conn.execute("SELECT rx FROM fgraph_facts WHERE id = ?", (kept,)).fetchone() == (66,)
        assert conn.execute("SELECT count(*) FROM fgraph_facts WHERE id = ?", (dropped,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM fgraph_blobs").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM fgraph_fts WHERE rowid = ?", (kept,)).fetchone() == (0,)
    finally:
        db.close()


def test_event_hash_is_sha256_of_the_utf8_payload():
    import hashlib
    assert event_hash("é") == hashlib.sha256("é".encode("utf-8")).digest()
