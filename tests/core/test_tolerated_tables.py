"""Spec README decision 9: exactly Litestream's two bookkeeping tables, with Litestream's shapes,
are tolerated foreign objects — opens, writes, reads, doctor, snapshot and the logical digest
ignore them, backup and restore-backup produce copies without them (which the published runtime
then opens), and every other foreign object, or these names with another shape, stays FormatError."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

import fgraph
from tests.support.peerlib import peer_executable
from tests.support.constants import CONFORMANCE_CLOCK

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
LITESTREAM_DDL = ("CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER);"
                  "CREATE TABLE _litestream_lock (id INTEGER);")


def raw(path: Path, sql: str) -> None:
    conn = apsw.Connection(str(path))
    try:
        conn.execute(sql)
    finally:
        conn.close()


def tables(path: Path) -> set:
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE name LIKE '\\_litestream%' "
                                                 "ESCAPE '\\'")}
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s.fgraph"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
        before = (db.snapshot(), db.logical_digest())
    raw(path, LITESTREAM_DDL +
        "INSERT INTO _litestream_seq VALUES (1, 7);")
    return path, before


def test_the_two_tables_are_ignored_everywhere(store):
    path, (snapshot, digest) = store
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        assert (db.snapshot(), db.logical_digest()) == (snapshot, digest)
        db.transact({"id": "bob", "person/name": "Bob"})
        assert db.entity("bob") == {"person/name": "Bob"}
        assert db.doctor()["ok"] is True
    assert tables(path) == {"_litestream_seq", "_litestream_lock"}  # never dropped from the live file
    proc = subprocess.run([FGRAPH, "--db", str(path), "doctor"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("ddl", [
    "CREATE TABLE _litestream_seq (id INTEGER, seq INTEGER)",          # another shape
    "CREATE TABLE _litestream_lock (id INTEGER, extra TEXT)",
    "CREATE TABLE _litestream_other (id INTEGER)",                    # another name
    "CREATE INDEX _litestream_lock ON fgraph_meta (key)",              # another kind
])
def test_anything_else_stays_a_format_error(tmp_path, ddl):
    path = tmp_path / "f.fgraph"
    fgraph.connect(str(path)).close()
    raw(path, ddl)
    with pytest.raises(fgraph.FormatError, match="foreign"):
        fgraph.connect(str(path))


def test_a_new_file_touched_by_litestream_first_can_still_be_initialized(tmp_path):
    path = tmp_path / "new.fgraph"
    raw(path, LITESTREAM_DDL)
    with fgraph.connect(str(path)) as db:
        assert db.stats()["transactions"] == 1 and db.doctor()["ok"] is True


def test_copies_are_made_without_them(store, tmp_path):
    path, (_, digest) = store
    copy = tmp_path / "backup.fgraph"
    with fgraph.connect(str(path), read_only=True) as db:
        proof = db.backup(str(copy), details=True)
    assert proof["digest"] == digest and tables(copy) == set()
    # a raw copy that still has them (say, `litestream restore` output) installs without them
    with fgraph.connect(str(path)) as db:
        db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw_copy = tmp_path / "raw.fgraph"
    shutil.copyfile(path, raw_copy)
    assert tables(raw_copy) == {"_litestream_seq", "_litestream_lock"}
    installed = tmp_path / "installed.fgraph"
    with fgraph.restore_backup(str(raw_copy), str(installed)) as db:
        assert db.logical_digest() == digest
    assert tables(installed) == set()


@pytest.mark.peer
def test_the_published_runtime_refuses_the_live_file_but_opens_our_backup(store, tmp_path):
    peer = peer_executable()
    if peer is None:
        pytest.skip("FGRAPH_PEER is not set")
    path, _ = store
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_")}
    refused = subprocess.run([peer, "--db", str(path), "info"], capture_output=True, text=True, env=env)
    assert refused.returncode == 1 and refused.stderr.startswith("FormatError"), refused.stderr
    copy = tmp_path / "for-peer.fgraph"
    assert subprocess.run([FGRAPH, "--db", str(path), "backup", str(copy)], capture_output=True).returncode == 0
    opened = subprocess.run([peer, "--db", str(copy), "doctor", "--json"], capture_output=True, text=True, env=env)
    assert opened.returncode == 0 and '"ok":true' in opened.stdout, opened.stdout + opened.stderr
