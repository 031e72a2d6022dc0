"""``fgraph.core.memory_copy``: an open WAL database copied into a writable ``:memory:`` connection
(the planning copy of ``fgraph mcp --propose``, decision M10 in docs/mcp.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import fgraph
from fgraph.core.memory_copy import image, memory_copy
from tests.support.clock import stepping_clock


def test_a_wal_store_read_only_copies_into_a_writable_memory_database_that_never_reaches_the_file(tmp_path):
    path = str(tmp_path / "a.db")
    with fgraph.connect(path, clock=stepping_clock()) as db:
        db.transact({"id": "ada", "p/n": "Ada"})
    with fgraph.connect(path, read_only=True) as store:
        pages = store.connection.serialize("main")
        assert pages[18:20] == b"\x02\x02"                   # a WAL file: the header SQLite cannot open in memory
        assert image(store.connection)[18:20] == b"\x01\x01"
        before = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        copy = memory_copy(store.connection)
        try:
            rows = "SELECT count(*) FROM sqlite_master"
            assert copy.execute(rows).fetchall() == store.connection.execute(rows).fetchall()
            copy.execute("CREATE TABLE scratch(x)")            # writable, though the source is read-only
            copy.execute("INSERT INTO scratch VALUES (1)")
            assert copy.execute("PRAGMA journal_mode").fetchall() == [("memory",)]
        finally:
            copy.close()
        assert store.entity("ada") == {"p/n": "Ada"}
    assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == before
