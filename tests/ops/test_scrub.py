"""Proves the physical scrub after an erasing commit (spec 07 §2, docs/forgetting.md): secure delete,
FTS optimize, VACUUM and a truncated WAL; a reader holding the WAL leaves a recorded pending scrub
that doctor reports and that `doctor --repair` or the next excision finishes, bytes then gone."""

from __future__ import annotations

import json
import os
import time

import apsw
import pytest

import fgraph
from fgraph.cli import main as cli
from fgraph.core import connection
from fgraph.core.rows import Rows
from fgraph.ops import scrub
from tests.support.clock import stepping_clock

REPORT_KEYS = {"checkpoint", "complete", "first_checkpoint_complete", "fts_optimized", "secure_delete", "seconds",
               "vacuumed"}
COMPLETE = "complete: the WAL was checkpointed and truncated"
CANARIES = ("zqxcanaryshort", "zqxcanarylong" + "L" * 400, "zqxcanarytag")


@pytest.fixture(autouse=True)
def short_busy_timeout(monkeypatch):
    """A blocked TRUNCATE checkpoint waits out the busy timeout twice; keep that wait short here."""
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 100)


def open_store(path) -> fgraph.Db:
    return fgraph.connect(str(path), clock=stepping_clock())


def plant(db) -> None:
    db.transact({"id": "victim", "v/short": CANARIES[0], "v/long": CANARIES[1], "v/tags": CANARIES[2]})
    db.transact({"id": "victim", "v/short": CANARIES[0] + "-2"})  # history keeps the old value too
    db.transact({"id": "keeper", "v/short": "stays", "v/friend": {"ref": "victim"}})


def canary_hits(path) -> dict:
    """Occurrences of any canary in the database file and its WAL (and their sizes)."""
    found = {}
    for name in (str(path), str(path) + "-wal"):
        if os.path.exists(name):
            with open(name, "rb") as handle:
                data = handle.read()
            found[os.path.basename(name)] = sum(data.count(c[:14].encode()) for c in CANARIES)
    return found


def wal_size(path) -> int:
    return os.path.getsize(str(path) + "-wal")


class Reader:
    """Another connection that holds a read transaction, so it pins the WAL."""

    def __init__(self, path):
        self.conn = apsw.Connection(str(path))
        self.conn.execute("BEGIN")
        self.conn.execute("SELECT count(*) FROM fgraph_facts").fetchall()

    def close(self) -> None:
        self.conn.execute("COMMIT")
        self.conn.close()


# -- the marker -----------------------------------------------------------------------------------

def test_marker_path_and_pending(tmp_path):
    path = str(tmp_path / "m.db")
    assert scrub.marker_path(path) == path + ".scrub-pending"
    assert scrub.pending(path) is None
    with open(path + ".scrub-pending", "w", encoding="utf-8") as handle:
        json.dump({"tx": 70, "since": 1.5}, handle)
    assert scrub.pending(path) == {"tx": 70, "since": 1.5}


@pytest.mark.parametrize("content", ["", "{not json", "\xff", '{"tx": 70}', '{"fgraph": "other/1", "tx": 70}',
                                     '{"tx": "70", "since": 1}'])
def test_a_marker_that_does_not_prove_itself_is_pending_with_a_problem(tmp_path, content):
    """Issue 47 item 6: a marker is written atomically, so never torn; a file that does not say it is
    fgraph's marker is reported as a problem (and left alone), never taken for a scrub owed."""
    path = str(tmp_path / "m.db")
    with open(path + ".scrub-pending", "w", encoding="utf-8") as handle:
        handle.write(content)
    owed = scrub.pending(path)
    assert owed["tx"] is None and "is not fgraph's scrub marker" in owed["problem"]


def test_memory_databases_never_pend():
    assert scrub.pending(":memory:") is None
    db = fgraph.connect(":memory:", clock=stepping_clock())
    try:
        report = scrub.scrub(db.connection, ":memory:", 65)
        assert report == {"checkpoint": "not needed (in-memory database)", "complete": True, "fts_optimized": True,
                          "secure_delete": True, "vacuumed": False}
        assert db.connection.execute("PRAGMA secure_delete").fetchall() == [(1,)]
        db.transact({"id": "victim", "v/short": "x"})
        assert db.excise("victim")["scrub"]["complete"] is True
    finally:
        db.close()


# -- the steps ------------------------------------------------------------------------------------

def test_enable_secure_delete(tmp_path):
    db = open_store(tmp_path / "s.db")
    try:
        assert db.connection.execute("PRAGMA secure_delete").fetchall() == [(0,)]
        scrub.enable_secure_delete(db.connection)
        assert db.connection.execute("PRAGMA secure_delete").fetchall() == [(1,)]
    finally:
        db.close()


def fts_blocks_with(conn, token: str) -> int:
    return conn.execute("SELECT count(*) FROM fgraph_fts_data WHERE instr(block, CAST(? AS BLOB)) > 0",
                        (token,)).fetchone()[0]


def test_optimise_fts_drops_the_words_of_deleted_rows(tmp_path):
    db = open_store(tmp_path / "s.db")
    try:
        db.transact({"id": "victim", "v/short": "zqxcanaryword"})
        db.transact(["retract", "victim"])
        conn = db.connection
        assert conn.execute("SELECT count(*) FROM fgraph_fts WHERE fgraph_fts MATCH 'zqxcanaryword'").fetchone() == (0,)
        assert fts_blocks_with(conn, "zqxcanaryword") > 0  # unreachable, but still in an index segment
        conn.execute("BEGIN IMMEDIATE")
        Rows(conn).optimize_fts()
        conn.execute("COMMIT")
        assert fts_blocks_with(conn, "zqxcanaryword") == 0
        assert db.doctor()["ok"] is True
    finally:
        db.close()


def test_checkpoint_truncate_idle_and_blocked(tmp_path):
    path = tmp_path / "s.db"
    db = open_store(path)
    try:
        db.transact({"id": "a", "v/short": "one"})
        assert wal_size(path) > 0
        assert scrub.checkpoint_truncate(db.connection) == (True, 0)
        assert wal_size(path) == 0
        reader = Reader(path)
        try:
            db.transact({"id": "a", "v/short": "two"})
            done, frames = scrub.checkpoint_truncate(db.connection)
            assert done is False and frames > 0  # frames the reader may still need stay in the WAL
            assert wal_size(path) > 0
        finally:
            reader.close()
        assert scrub.checkpoint_truncate(db.connection) == (True, 0)
        assert wal_size(path) == 0
    finally:
        db.close()


def test_complete_scrub_report_and_file_state(tmp_path):
    path = tmp_path / "s.db"
    db = open_store(path)
    try:
        plant(db)
        db.declare("v/big", nohistory=True)
        db.transact({"id": "victim", "v/big": "B" * 40_000})
        db.transact({"id": "victim", "v/big": "small"})  # deletes the row and its blob: pages go free
        assert db.connection.execute("PRAGMA freelist_count").fetchone()[0] > 0
        assert wal_size(path) > 0
        stale = scrub.marker_path(str(path))
        with open(stale, "w", encoding="utf-8") as handle:
            json.dump({"tx": 1, "since": 0}, handle)
        report = scrub.scrub(db.connection, str(path), 99)
        assert set(report) == REPORT_KEYS
        assert {k: v for k, v in report.items() if k != "seconds"} == {
            "checkpoint": COMPLETE, "complete": True, "first_checkpoint_complete": True, "fts_optimized": True,
            "secure_delete": True, "vacuumed": True}
        assert isinstance(report["seconds"], float) and 0 <= report["seconds"] < 5
        assert not os.path.exists(stale)
        assert wal_size(path) == 0
        assert db.connection.execute("PRAGMA freelist_count").fetchall() == [(0,)]
        assert db.connection.execute("PRAGMA secure_delete").fetchall() == [(1,)]
        assert db.doctor()["ok"] is True
    finally:
        db.close()


def test_excise_report_carries_a_complete_scrub_and_leaves_no_canary(tmp_path):
    path = tmp_path / "s.db"
    db = open_store(path)
    try:
        plant(db)
        assert sum(canary_hits(path).values()) > 0  # the control: the bytes are there before
        report = db.excise("victim", operation_id="erase", if_basis_tx=db.latest_tx())
        assert set(report["scrub"]) == REPORT_KEYS
        assert report["scrub"]["complete"] is True and report["scrub"]["checkpoint"] == COMPLETE
        assert scrub.pending(str(path)) is None
        assert canary_hits(path) == {"s.db": 0, "s.db-wal": 0}
        assert wal_size(path) == 0
        assert fts_blocks_with(db.connection, "zqxcanaryshort") == 0
        assert db.entity("keeper") == {"v/short": "stays"}
    finally:
        db.close()


# -- pending scrubs ---------------------------------------------------------------------------------

def excise_under_reader(path):
    """Plant, then excise while another connection reads: returns (db, reader, report)."""
    db = open_store(path)
    plant(db)
    reader = Reader(path)
    report = db.excise("victim", operation_id="erase")
    return db, reader, report


def test_blocked_scrub_records_its_transaction(tmp_path):
    path = tmp_path / "s.db"
    before = time.time()
    db, reader, report = excise_under_reader(path)
    try:
        state = report["scrub"]
        assert state["complete"] is False and state["first_checkpoint_complete"] is False
        assert state["checkpoint"].startswith("pending: another connection holds the WAL open (")
        assert "`fgraph doctor --repair`" in state["checkpoint"]
        marker = scrub.pending(str(path))
        assert set(marker) == {"fgraph", "tx", "since"} and marker["fgraph"] == "fgraph-scrub-pending/1"
        assert marker["tx"] == report["tx"]
        assert before <= marker["since"] <= time.time()
        assert canary_hits(path)["s.db-wal"] > 0  # the control: old page images are still in the WAL
    finally:
        reader.close()
        db.close()


def test_pending_scrub_is_reported_by_every_doctor(tmp_path):
    path = tmp_path / "s.db"
    db, reader, report = excise_under_reader(path)
    reader.close()
    expected = (f"excision scrub pending since transaction {report['tx']}: erased bytes may remain in the file "
                "or its WAL")
    try:
        for handle in (db, db.at(db.latest_tx())):
            result = handle.doctor()
            assert result["ok"] is False and result["repair_needed"] is True
            assert result["problems"] == [expected]
        ro = fgraph.connect(str(path), read_only=True)
        try:
            assert ro.doctor()["problems"] == [expected]
            with pytest.raises(fgraph.ReadOnly):
                ro.doctor(repair=True)
        finally:
            ro.close()
        assert scrub.pending(str(path))["tx"] == report["tx"]
    finally:
        db.close()


def test_cli_doctor_repair_finishes_the_scrub(tmp_path, capsys):
    path = tmp_path / "s.db"
    db, reader, _ = excise_under_reader(path)
    reader.close()
    try:  # the excising connection stays open (idle), so the WAL keeps its old page images until repaired
        assert canary_hits(path)["s.db-wal"] > 0
        assert cli.run(["--db", str(path), "--json", "doctor"]) == 1
        assert json.loads(capsys.readouterr().out)["repair_needed"] is True
        assert cli.run(["--db", str(path), "--json", "doctor", "--repair"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["ok"] is True and result["problems"] == [] and result["repaired"] is True
        assert scrub.pending(str(path)) is None
        assert canary_hits(path) == {"s.db": 0, "s.db-wal": 0}
    finally:
        db.close()


def test_the_next_excision_finishes_a_pending_scrub(tmp_path):
    path = tmp_path / "s.db"
    db, reader, _ = excise_under_reader(path)
    reader.close()
    try:
        assert canary_hits(path)["s.db-wal"] > 0
        report = db.excise("keeper", operation_id="erase-2")
        assert report["scrub"]["complete"] is True
        assert scrub.pending(str(path)) is None
        assert canary_hits(path) == {"s.db": 0, "s.db-wal": 0}
        assert db.doctor()["ok"] is True
    finally:
        db.close()


def test_repair_leaves_a_marker_that_does_not_prove_itself(tmp_path):
    path = tmp_path / "s.db"
    db = open_store(path)
    try:
        db.transact({"id": "a", "v/short": "x"})
        with open(scrub.marker_path(str(path)), "w", encoding="utf-8") as handle:
            handle.write("garbage")
        [problem] = db.doctor()["problems"]
        assert "is not fgraph's scrub marker" in problem and "left alone" in problem
        repaired = db.doctor(repair=True)
        assert repaired["ok"] is False and repaired["problems"] == [problem]
        assert (tmp_path / "s.db.scrub-pending").read_text(encoding="utf-8") == "garbage"
        os.unlink(scrub.marker_path(str(path)))
        assert db.doctor()["ok"] is True and scrub.pending(str(path)) is None
    finally:
        db.close()
