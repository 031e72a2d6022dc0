"""``core.connection.temp_schema_writable``: the one place a read-only handle may create TEMP tables (a
query's intermediate relations, the search vocabulary). Inside it the main database stays unwritable by
the handle's open flags and the ``query_only`` guard comes back afterwards, even after an error; a handle
guarded by ``query_only`` alone is refused, since lifting its guard would leave it writable."""

from __future__ import annotations

import apsw
import pytest

import fgraph
from fgraph.core.connection import temp_schema_writable
from fgraph.core.errors import QueryError


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "s.db")
    with fgraph.connect(path) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
    return path


def guard(conn) -> int:
    return conn.execute("PRAGMA query_only").fetchone()[0]


def test_a_read_only_handle_makes_temp_tables_and_its_guard_comes_back(store):
    with fgraph.connect(store, read_only=True) as db:
        conn = db.connection
        assert guard(conn) == 1
        with temp_schema_writable(conn):
            conn.execute("CREATE TEMP TABLE t(x)")
            conn.execute("INSERT INTO temp.t VALUES (1)")
            with pytest.raises(apsw.ReadOnlyError):   # the file itself stays unwritable
                conn.execute("CREATE TABLE main.intruder(x)")
        assert guard(conn) == 1
        with pytest.raises(ZeroDivisionError), temp_schema_writable(conn):
            raise ZeroDivisionError
        assert guard(conn) == 1


def test_a_handle_guarded_by_query_only_alone_is_refused(store):
    with fgraph.connect(store) as db:
        conn = db.connection
        conn.execute("PRAGMA query_only = 1")
        with pytest.raises(QueryError, match="query_only alone"), temp_schema_writable(conn):
            pass
        assert guard(conn) == 1


def test_a_writable_handle_is_left_as_it_is(store):
    with fgraph.connect(store) as db:
        with temp_schema_writable(db.connection):
            db.connection.execute("CREATE TEMP TABLE t(x)")
        assert guard(db.connection) == 0
