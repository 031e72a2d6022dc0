"""Proves the one transaction helper (fgraph/core/txn.py): commit on success, nothing written on
discard or on any exception (caches cleared), a busy writer is a typed Conflict, reads join an open
transaction, and no other module opens a transaction."""

from __future__ import annotations

import pathlib
import re

import apsw
import pytest

import fgraph
from fgraph.core.txn import read_transaction, step, write_transaction

PACKAGE = pathlib.Path(fgraph.__file__).parent


class Cache:
    def __init__(self):
        self.cleared = 0

    def clear(self):
        self.cleared += 1


def count(conn):
    return conn.execute("SELECT count(*) FROM fgraph_meta").fetchone()[0]


def test_begin_appears_in_the_helper_only():
    openers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if re.search(r"""execute\(\s*f?["'](BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|END)\b""",
                                  p.read_text()))
    assert openers == ["core/txn.py"]


def test_commit_discard_and_rollback(tmp_path):
    db = fgraph.connect(str(tmp_path / "t.db"))
    try:
        conn = db.connection
        before = count(conn)
        with write_transaction(conn):
            conn.execute("INSERT INTO fgraph_meta (key, value) VALUES ('t1', 1)")
        assert count(conn) == before + 1
        with write_transaction(conn) as txn:
            conn.execute("INSERT INTO fgraph_meta (key, value) VALUES ('t2', 1)")
            txn.discard()
        assert count(conn) == before + 1
        cache = Cache()
        with pytest.raises(ZeroDivisionError):
            with write_transaction(conn, cache):
                conn.execute("INSERT INTO fgraph_meta (key, value) VALUES ('t3', 1)")
                1 / 0
        assert count(conn) == before + 1 and cache.cleared == 1 and conn.getautocommit()
    finally:
        db.close()


def test_a_failed_step_undoes_only_itself(tmp_path):
    db = fgraph.connect(str(tmp_path / "s.db"))
    try:
        conn = db.connection
        before = count(conn)
        cache = Cache()
        with write_transaction(conn):
            with step(conn, cache):
                conn.execute("INSERT INTO fgraph_meta (key, value) VALUES ('kept', 1)")
            with pytest.raises(ZeroDivisionError):
                with step(conn, cache):
                    conn.execute("INSERT INTO fgraph_meta (key, value) VALUES ('undone', 1)")
                    1 / 0
            assert cache.cleared == 1 and not conn.getautocommit()  # the transaction goes on
            conn.execute("INSERT INTO fgraph_meta (key, value) VALUES ('after', 1)")
        keys = {k for (k,) in conn.execute("SELECT key FROM fgraph_meta")}
        assert count(conn) == before + 2 and {"kept", "after"} <= keys and "undone" not in keys
    finally:
        db.close()


def test_a_second_writer_gets_a_typed_conflict(tmp_path):
    path = str(tmp_path / "busy.db")
    db = fgraph.connect(path)
    other = apsw.Connection(path)
    other.set_busy_timeout(0)
    try:
        with write_transaction(db.connection):
            with pytest.raises(fgraph.Conflict, match="locked by another writer"):
                with write_transaction(other):
                    pass
    finally:
        other.close()
        db.close()


def test_write_inside_an_open_read_is_refused_and_reads_join():
    db = fgraph.connect(":memory:")
    try:
        conn = db.connection
        with read_transaction(conn):
            assert not conn.getautocommit()
            with read_transaction(conn):  # joins, does not nest
                pass
            assert not conn.getautocommit()
            with pytest.raises(fgraph.Conflict, match="inside a read"):
                with write_transaction(conn):
                    pass
        assert conn.getautocommit()
    finally:
        db.close()
