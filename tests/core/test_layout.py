"""Proves the format-v2 layout of spec 01 §4–§5: the shipped DDL is the normative text, files are
classified empty / fgraph / refused without ever being written, and only FTS5 shadow tables may
accompany the 15 required objects."""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import re

import apsw
import pytest

import fgraph
from fgraph.core import layout
from fgraph.core.connection import open_connection
from tests.support.paths import REPO, SHARED
from tests.support.clock import stepping_clock

SPEC_FORMAT = SHARED / "spec" / "01-format.md"
REQUIRED = {
    "fgraph_meta": "table", "fgraph_ids": "table", "fgraph_events": "table", "fgraph_facts": "table",
    "fgraph_blobs": "table", "fgraph_fts": "table",
    "fgraph_ids_created": "index", "fgraph_eavt": "index", "fgraph_avet": "index", "fgraph_vaet": "index",
    "fgraph_hist": "index", "fgraph_txin": "index", "fgraph_txout": "index",
    "fgraph_view": "view", "fgraph_now": "view",
}


def sha(path) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def raw(path, read_only: bool = True) -> apsw.Connection:
    if read_only:
        return apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    return apsw.Connection(str(path))


def classify_file(path, read_only: bool = True) -> str:
    conn = raw(path, read_only)
    try:
        return layout.classify(conn, str(path))
    finally:
        conn.close()


def schema_of(path) -> list:
    conn = raw(path)
    try:
        return conn.execute("SELECT type, name, sql FROM sqlite_schema").fetchall()
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s.db"
    fgraph.connect(str(path), clock=stepping_clock()).close()
    return path


# -- the DDL --------------------------------------------------------------------------------------

def test_shipped_ddl_is_the_repository_schema_file():
    shipped = importlib.resources.files("fgraph.schema").joinpath("format-v2.sql").read_bytes()
    assert shipped == (REPO / "schema" / "format-v2.sql").read_bytes()
    text = shipped.decode("utf-8")
    assert layout.ddl_text() == "\n".join(line for line in text.splitlines() if not line.startswith("--")) + "\n"
    assert "--" not in layout.ddl_text()


@pytest.mark.skipif(not SPEC_FORMAT.is_file(), reason="../shared/spec is not present")
def test_ddl_is_byte_identical_to_the_spec():
    section = SPEC_FORMAT.read_text("utf-8").split("## 5. Exact DDL", 1)[1]
    block = re.search(r"```sql\n(.*?)```", section, re.DOTALL).group(1)
    assert layout.ddl_text() == block


def test_expected_objects_are_the_fifteen_required():
    expected = layout.expected_objects()
    assert {name: kind for name, (kind, _) in expected.items()} == REQUIRED
    for _kind, sql in expected.values():
        assert sql == sql.lower() and "  " not in sql and "\n" not in sql
    assert expected["fgraph_txin"] == ("index", "create index fgraph_txin on fgraph_facts (tx)")


def test_markers():
    assert layout.APPLICATION_ID == 1718055521
    assert layout.APPLICATION_ID.to_bytes(4, "big") == b"fgra"
    assert layout.USER_VERSION == 2


def test_new_file_schema_is_the_ddl_plus_sqlite_and_shadow_objects(store):
    objects = schema_of(store)
    ours = {name for _, name, _ in objects if not name.startswith("sqlite_")}
    assert ours == set(REQUIRED) | layout.FTS_SHADOW_TABLES
    assert {name for _, name, _ in objects if name.startswith("fgraph_fts_")} == layout.FTS_SHADOW_TABLES
    layout.validate_objects(objects, str(store))  # does not raise
    conn = raw(store)
    try:
        assert conn.execute("PRAGMA application_id").fetchall() == [(1718055521,)]
        assert conn.execute("PRAGMA user_version").fetchall() == [(2,)]
    finally:
        conn.close()


# -- classification -------------------------------------------------------------------------------

def test_classify_new_and_zero_length_files_as_empty(tmp_path):
    new = tmp_path / "new.db"
    assert classify_file(new, read_only=False) == layout.EMPTY
    zero = tmp_path / "zero.db"
    zero.write_bytes(b"")
    assert classify_file(zero) == layout.EMPTY
    assert zero.read_bytes() == b""


def test_classify_fgraph_file_reads_without_writing(store):
    before = sha(store)
    assert classify_file(store) == layout.FGRAPH
    assert classify_file(store, read_only=False) == layout.FGRAPH
    assert sha(store) == before


@pytest.mark.parametrize("content", [
    b"SQLite format 3\x00" + b"\xff" * 84,          # a header and nothing sane behind it
    b"plain text, no database here\n" * 40,
    bytes(range(256)) * 16,
])
def test_damaged_or_non_sqlite_files_are_format_error_untouched(tmp_path, content):
    path = tmp_path / "junk.db"
    path.write_bytes(content)
    with pytest.raises(fgraph.FormatError) as caught:
        classify_file(path)
    assert caught.value.hint
    assert path.read_bytes() == content
    assert sorted(os.listdir(tmp_path)) == ["junk.db"]


def foreign_file(path, *statements) -> None:
    conn = apsw.Connection(str(path))
    try:
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


@pytest.mark.parametrize("statements, why", [
    (["CREATE TABLE notes (x)"], "another application"),
    (["CREATE VIEW v AS SELECT 1"], "another application"),
    (["PRAGMA application_id = 1718055521", "PRAGMA user_version = 1"], "not format v2"),
    (["PRAGMA application_id = 1", "PRAGMA user_version = 2"], "not format v2"),
    (["PRAGMA application_id = 1718055521", "PRAGMA user_version = 2"], "missing"),  # markers, no layout
])
def test_foreign_sqlite_files_are_refused(tmp_path, statements, why):
    path = tmp_path / "other.db"
    foreign_file(path, *statements)
    before = sha(path)
    with pytest.raises(fgraph.FormatError) as caught:
        classify_file(path)
    assert why in caught.value.message
    assert sha(path) == before


def test_initialize_refuses_a_foreign_file_and_writes_nothing(tmp_path):
    path = tmp_path / "other.db"
    foreign_file(path, "CREATE TABLE notes (x)", "INSERT INTO notes VALUES (1)")
    before = sha(path)
    conn = raw(path, read_only=False)
    try:
        with pytest.raises(fgraph.FormatError):
            layout.initialize(conn, str(path), stepping_clock())
        assert conn.getautocommit()  # the write transaction was rolled back
        assert conn.execute("SELECT name FROM sqlite_schema").fetchall() == [("notes",)]
    finally:
        conn.close()
    assert sha(path) == before


def test_initialize_creates_once_and_is_a_no_op_afterwards():
    conn = apsw.Connection(":memory:")
    try:
        layout.initialize(conn, ":memory:", stepping_clock())
        assert layout.classify(conn, ":memory:") == layout.FGRAPH
        before = conn.execute("SELECT * FROM fgraph_facts ORDER BY id").fetchall()
        layout.initialize(conn, ":memory:", stepping_clock(1))  # another writer won: nothing more happens
        assert conn.execute("SELECT * FROM fgraph_facts ORDER BY id").fetchall() == before
        assert conn.execute("SELECT count(*) FROM fgraph_events").fetchall() == [(1,)]
    finally:
        conn.close()


# -- extra and altered objects --------------------------------------------------------------------

@pytest.mark.parametrize("mutation", [
    "CREATE TRIGGER fgraph_audit AFTER INSERT ON fgraph_facts BEGIN SELECT 1; END",
    "CREATE VIEW fgraph_extra AS SELECT 1",
    "CREATE TABLE fgraph_fts_extra (x)",
    "CREATE INDEX fgraph_facts_v ON fgraph_facts (v)",
    "CREATE VIRTUAL TABLE notes USING fts5(text)",
    "DROP VIEW fgraph_now; CREATE VIEW fgraph_now AS SELECT * FROM fgraph_view",
    "DROP VIEW fgraph_now",
])
def test_extra_missing_or_altered_objects_are_format_error(store, mutation):
    foreign_file(store, mutation)
    before = sha(store)
    with pytest.raises(fgraph.FormatError) as caught:
        classify_file(store)
    assert caught.value.hint
    assert sha(store) == before


def test_sqlite_internal_objects_are_allowed(store):
    foreign_file(store, "ANALYZE")  # creates sqlite_stat1 (doctor --repair runs ANALYZE)
    assert any(name == "sqlite_stat1" for _, name, _ in schema_of(store))
    assert classify_file(store) == layout.FGRAPH


def required_objects(path) -> list:
    return [row for row in schema_of(path) if row[1] in REQUIRED]


def test_validate_objects_without_shadow_tables_is_still_valid(store):
    layout.validate_objects(required_objects(store), str(store))


def test_shadow_tables_are_exempt_whatever_they_hold(store):
    objects = required_objects(store) + [("table", name, "CREATE TABLE x (anything)")
                                         for name in sorted(layout.FTS_SHADOW_TABLES)]
    layout.validate_objects(objects, str(store))


@pytest.mark.parametrize("edit, fragment", [
    (lambda objs: objs[1:], "missing"),
    (lambda objs: objs + [("table", "intruder", "CREATE TABLE intruder (x)")], "foreign"),
    (lambda objs: [(k, n.upper() if n == "fgraph_txin" else n, s) for k, n, s in objs], "foreign"),
    (lambda objs: [(k, n, s.replace("(tx)", "( tx )") if n == "fgraph_txin" else s) for k, n, s in objs],
     "differs"),
    (lambda objs: [("view" if n == "fgraph_txin" else k, n, s) for k, n, s in objs], "differs"),
])
def test_validate_objects_reports_what_is_wrong(store, edit, fragment):
    with pytest.raises(fgraph.FormatError) as caught:
        layout.validate_objects(edit(required_objects(store)), str(store))
    assert fragment in caught.value.message
    assert str(store) in caught.value.message


def test_whitespace_and_case_runs_are_not_drift(store):
    objects = [(k, n, re.sub(r" ", "\n\t  ", s).upper() if n == "fgraph_txin" else s)
               for k, n, s in required_objects(store)]
    layout.validate_objects(objects, str(store))


class _GenesisBetweenReads:
    """A connection whose first marker read lets another process commit genesis (defect 15.2)."""

    def __init__(self, conn, path):
        self._conn, self._path, self._fired = conn, path, False

    def getautocommit(self):
        return self._conn.getautocommit()

    def execute(self, sql, *args):
        cursor = self._conn.execute(sql, *args)
        if "application_id" in sql and not self._fired:
            self._fired = True
            rows = cursor.fetchall()
            open_connection(self._path).close()  # the other process: genesis, committed
            return _Rows(rows)
        return cursor


class _Rows(list):
    def fetchall(self):
        return list(self)


def test_classify_reads_markers_and_objects_as_of_one_instant(tmp_path):
    path = str(tmp_path / "new.db")
    conn = apsw.Connection(path)
    conn.execute("PRAGMA journal_mode = WAL")  # a new file the first writer has switched to WAL
    try:
        assert layout.classify(_GenesisBetweenReads(conn, path), path) == layout.EMPTY
        assert layout.classify(conn, path) == layout.FGRAPH
    finally:
        conn.close()
