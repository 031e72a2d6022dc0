"""The core rows of spec 01 §10, computed through APSW so no sqlite3 shell is needed."""

from __future__ import annotations

import apsw

CORE_QUERIES = (
    "SELECT 'meta', key, typeof(value), quote(value) FROM fgraph_meta ORDER BY key",
    "SELECT 'id', id, ifnull(quote(name),'NULL'), ifnull(hex(gid),'NULL'), created_tx FROM fgraph_ids ORDER BY id",
    "SELECT 'event', tx, hex(event_hash), ifnull(quote(event_data),'NULL'), ifnull(quote(operation_id),'NULL'),"
    " ifnull(hex(request_hash),'NULL') FROM fgraph_events ORDER BY tx",
    "SELECT 'fact', id, e, a, typeof(v), quote(v), t, tx, ifnull(rx, 'NULL') FROM fgraph_facts ORDER BY id",
    "SELECT 'blob', hex(hash), typeof(data), quote(data) FROM fgraph_blobs ORDER BY hash",
    "SELECT 'sequence', name, seq FROM sqlite_sequence WHERE name='fgraph_facts'",
)


def core_rows_of(conn: apsw.Connection) -> str:
    lines = []
    for sql in CORE_QUERIES:
        for row in conn.execute(sql):
            lines.append("|".join(str(col) for col in row))
    return "\n".join(lines) + "\n"


def core_rows(path: str) -> str:
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        return core_rows_of(conn)
    finally:
        conn.close()
