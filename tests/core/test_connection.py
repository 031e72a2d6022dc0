"""Proves the connection policy and file classification of spec 01 §3–§4: pragmas,
read-only opens, foreign and damaged files refused untouched, genesis exactly once."""

from __future__ import annotations

import hashlib
import os
import stat

import apsw
import pytest

import fgraph
from fgraph.core import connection, layout
from tests.support.clock import stepping_clock


def pragma(conn, name):
    return conn.execute(f"PRAGMA {name}").fetchall()[0][0]


def sha(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def test_writable_file_policy(tmp_path):
    conn = connection.open_connection(str(tmp_path / "a.db"), genesis_clock=stepping_clock())
    try:
        assert pragma(conn, "journal_mode") == "wal"
        assert pragma(conn, "synchronous") == 2
        assert pragma(conn, "wal_autocheckpoint") == 1000
        assert pragma(conn, "foreign_keys") == 0
        assert pragma(conn, "busy_timeout") == 5000
        assert pragma(conn, "trusted_schema") == 0
        assert pragma(conn, "query_only") == 0
        assert pragma(conn, "application_id") == 1718055521
        assert pragma(conn, "user_version") == 2
    finally:
        conn.close()


def test_read_only_policy_and_write_refused(tmp_path):
    path = str(tmp_path / "a.db")
    fgraph.connect(path, clock=stepping_clock()).close()
    db = fgraph.connect(path, read_only=True)
    try:
        assert pragma(db.connection, "query_only") == 1
        assert pragma(db.connection, "journal_mode") == "wal"
        with pytest.raises(fgraph.ReadOnly):
            db.transact({"id": "x", "a/b": 1})
        with pytest.raises(apsw.ReadOnlyError):
            db.connection.execute("DELETE FROM fgraph_meta")
    finally:
        db.close()


def test_memory_database(tmp_path):
    db = fgraph.connect(":memory:", clock=stepping_clock())
    try:
        assert pragma(db.connection, "journal_mode") == "memory"
        assert db.stats()["size"] == 0
    finally:
        db.close()
    with pytest.raises(fgraph.ReadOnly):
        fgraph.connect(":memory:", read_only=True)


def test_read_only_missing_file_is_not_found_and_not_created(tmp_path):
    path = tmp_path / "missing.db"
    with pytest.raises(fgraph.NotFound):
        fgraph.connect(str(path), read_only=True)
    assert not path.exists()


def test_schema_equals_normative_ddl(tmp_path):
    db = fgraph.connect(str(tmp_path / "a.db"), clock=stepping_clock())
    try:
        stored = db.connection.execute(
            "SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'fgraph_fts_%'"
            " AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall()
    finally:
        db.close()
    statements = [s.strip() for s in layout.ddl_text().split(";") if s.strip()]
    creates = [s for s in statements if s.upper().startswith("CREATE")]
    assert [sql for _, sql in stored] == creates
    assert len(stored) == 15


@pytest.mark.parametrize("content", [b"hello, not a database\n" * 10, os.urandom(4096)])
def test_not_sqlite_is_format_error_and_untouched(tmp_path, content):
    path = tmp_path / "junk.db"
    path.write_bytes(content)
    before = sha(path)
    for read_only in (False, True):
        with pytest.raises(fgraph.FormatError):
            fgraph.connect(str(path), read_only=read_only)
    assert sha(path) == before
    assert not (tmp_path / "junk.db-wal").exists()


def make_sqlite(path, *statements):
    conn = apsw.Connection(str(path))
    for sql in statements:
        conn.execute(sql)
    conn.close()


@pytest.mark.parametrize("statements", [
    ["CREATE TABLE t (x)"],
    ["PRAGMA application_id = 1718055521"],
    ["PRAGMA application_id = 1718055521", "PRAGMA user_version = 1"],
    ["PRAGMA user_version = 2"],
    ["PRAGMA application_id = 1718055521", "PRAGMA user_version = 3"],
])
def test_foreign_markers_or_objects_refused_untouched(tmp_path, statements):
    path = tmp_path / "other.db"
    make_sqlite(path, *statements)
    before = sha(path)
    with pytest.raises(fgraph.FormatError):
        fgraph.connect(str(path))
    assert sha(path) == before


def test_zero_length_file_gets_genesis(tmp_path):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    db = fgraph.connect(str(path), clock=stepping_clock())
    try:
        assert db.stats()["transactions"] == 1
    finally:
        db.close()


@pytest.mark.parametrize("mutation, ok", [
    ("CREATE TABLE extra (x)", False),
    ("CREATE INDEX FGRAPH_TXIN2 ON fgraph_facts (tx)", False),
    ("DROP INDEX fgraph_txin", False),
    ("DROP INDEX fgraph_txin; CREATE   INDEX fgraph_txin   ON FGRAPH_FACTS (TX)", True),
    ("DROP INDEX fgraph_txin; CREATE INDEX fgraph_txin ON fgraph_facts(tx)", False),
    ("DROP INDEX fgraph_txin; CREATE INDEX fgraph_txin ON fgraph_facts ( tx )", False),
])
def test_layout_drift(tmp_path, mutation, ok):
    path = tmp_path / "drift.db"
    fgraph.connect(str(path), clock=stepping_clock()).close()
    conn = apsw.Connection(str(path))
    conn.execute(mutation)
    conn.close()
    if ok:
        fgraph.connect(str(path)).close()
    else:
        with pytest.raises(fgraph.FormatError):
            fgraph.connect(str(path))


def test_reopening_does_not_change_the_file(tmp_path):
    path = tmp_path / "a.db"
    fgraph.connect(str(path), clock=stepping_clock()).close()
    before = sha(path)
    fgraph.connect(str(path)).close()
    fgraph.connect(str(path), read_only=True).close()
    assert sha(path) == before


def test_empty_path_is_format_error():
    with pytest.raises(fgraph.FormatError):
        fgraph.connect("")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory_falls_back_to_immutable(tmp_path):  # pragma: no cover - needs non-root
    path = tmp_path / "d" / "a.db"
    path.parent.mkdir()
    fgraph.connect(str(path), clock=stepping_clock()).close()
    path.parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        db = fgraph.connect(str(path), read_only=True)
        assert db.stats()["transactions"] == 1
        db.close()
    finally:
        path.parent.chmod(stat.S_IRWXU)


def test_immutable_fallback_decision(tmp_path, monkeypatch):
    path = tmp_path / "a.db"
    fgraph.connect(str(path), clock=stepping_clock()).close()
    monkeypatch.setattr(os, "access", lambda p, mode: False)
    assert connection.needs_immutable(str(path))
    db = fgraph.connect(str(path), read_only=True)
    try:
        assert db.stats()["transactions"] == 1
    finally:
        db.close()


def test_writer_lock_busy_is_conflict(tmp_path, monkeypatch):
    path = str(tmp_path / "a.db")
    fgraph.connect(path, clock=stepping_clock()).close()
    holder = apsw.Connection(path)
    holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 50)
    db = fgraph.connect(path, clock=stepping_clock())
    try:
        with pytest.raises(fgraph.Conflict):
            db.transact({"id": "x", "a/b": 1})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        db.close()


def _open_at_once(path, barrier, results):
    barrier.wait()
    try:
        connection.open_connection(path).close()
        results.put("ok")
    except fgraph.FgraphError as exc:
        results.put(f"{exc.name}: {exc}")


def test_processes_opening_a_new_file_together_wait_for_each_other(tmp_path):
    """Switching a new file to WAL answers BUSY at once (no busy handler) while another process
    creates it; every opener must wait instead of failing with Conflict (issue 15, creation race)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    failures = []
    for round_number in range(40):
        path = str(tmp_path / f"new{round_number}.db")
        barrier, results = context.Barrier(6), context.Queue()
        workers = [context.Process(target=_open_at_once, args=(path, barrier, results)) for _ in range(6)]
        for worker in workers:
            worker.start()
        failures += [outcome for outcome in (results.get(timeout=60) for _ in workers) if outcome != "ok"]
        for worker in workers:
            worker.join(60)
    assert failures == []


def test_a_linked_sidecar_is_refused_where_sqlite_would_look_for_it(tmp_path):
    """Issue 29: a -wal or -shm planted as a link was a bare "unable to open"; a database given
    through a link has its sidecars beside the real file, and they are checked there."""
    import fgraph
    from fgraph.core.errors import FormatError
    real = tmp_path / "real"
    real.mkdir()
    with fgraph.connect(str(real / "x.db")) as db:
        db.transact({"id": "a", "t/n": 1})
    os.symlink(real / "x.db", tmp_path / "link.db")
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    os.symlink(victim, real / "x.db-wal")
    for path in (real / "x.db", tmp_path / "link.db"):
        with pytest.raises(FormatError, match="WAL file .* is a symbolic link"):
            fgraph.connect(str(path))
    assert victim.read_bytes() == b"keep"
