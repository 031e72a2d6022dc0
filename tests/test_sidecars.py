"""Regressions of issue 29's sidecar findings, through the real CLI on real files: no backup or new
database takes the name of another database's journal, WAL or shared memory; the sync cursor and
lock and the scrub marker are never written, created or read through a link, never block on a FIFO,
and a directory, FIFO or full disk where they go is a typed error that leaves the database as it was.
Each test failed before its fix (issue 29 items 1, 3-6, 9-12)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time

import pytest
from tests.support.cli import run_cli

NAMES = ("NotFound", "Conflict", "SchemaError", "TypeError", "QueryError", "FormatError", "ReadOnly",
         "TooLarge", "Unsupported")


def fg(*args, cwd, timeout=60, check=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_")}
    code, out, err = run_cli(*args, cwd=cwd, env=env, timeout=timeout, text=False)
    out, err = out.decode(), err.decode()
    if check:
        assert code == 0, err
    return code, out, err


def typed(result, name: str | None = None) -> str:
    """The failure is exit 1 with one typed line: never a traceback or an internal error."""
    code, out, err = result
    assert code == 1 and out == "", (code, out, err)
    assert err.split(":")[0] in NAMES and "Traceback" not in err and "internal error" not in err, err
    if name:
        assert err.startswith(name + ":"), err
    return err


def latest(db, cwd) -> int:
    return json.loads(fg("--db", db, "--json", "info", cwd=cwd, check=True)[1])["latest_tx"]


@pytest.fixture
def store(tmp_path):
    fg("--db", "s.db", "add", '{"id":"ada","p/name":"Ada"}', cwd=tmp_path, check=True)
    victim = tmp_path / "elsewhere"
    victim.write_bytes(b"keep")
    return tmp_path


# ---- item 1: a backup that takes a sidecar's name

@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
def test_a_backup_named_like_a_sidecar_is_refused_and_the_source_stays_readable(store, suffix):
    err = typed(fg("--db", "s.db", "backup", f"s.db{suffix}", cwd=store), "Conflict")
    assert "SQLite would take it for part of that database" in err
    if suffix == "-journal":   # -wal and -shm are s.db's own while it is open in WAL mode
        assert not (store / "s.db-journal").exists()
    for args in (("info",), ("get", "ada"), ("tail", "--since", "64"), ("doctor",)):
        assert fg("--db", "s.db", *args, cwd=store)[0] == 0, args   # before the fix: "readonly database"
    assert fg("--db", "s.db", "backup", f"other.db{suffix}", cwd=store)[0] == 1   # any database's sidecar name


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
def test_restore_backup_onto_a_sidecar_name_is_refused(store, suffix):
    fg("--db", "s.db", "backup", "b.db", cwd=store, check=True)
    typed(fg("restore-backup", "b.db", f"t.db{suffix}", cwd=store), "Conflict")
    assert not (store / f"t.db{suffix}").exists()


def test_a_new_database_is_not_created_under_a_sidecar_name(store):
    typed(fg("--db", "s.db-wal", "add", '{"id":"x"}', cwd=store), "Conflict")
    assert fg("--db", "s.db", "get", "ada", cwd=store)[0] == 0


# ---- items 3, 5, 6, 9, 12: sync's cursor and lock

def test_a_planted_cursor_temporary_link_is_never_written_through(store):
    os.symlink(store / "elsewhere", store / "t.db.sync.json.tmp")
    fg("sync", "--from", "s.db", "--to", "t.db", cwd=store, check=True)
    assert (store / "elsewhere").read_bytes() == b"keep"
    cursor = store / "t.db.sync.json"
    assert cursor.is_file() and not cursor.is_symlink() and json.loads(cursor.read_text())["sources"]


def test_a_dangling_lock_link_creates_nothing_elsewhere(store):
    os.symlink(store / "created-elsewhere", store / "t.db.sync.lock")
    err = typed(fg("sync", "--from", "s.db", "--to", "t.db", cwd=store), "Conflict")
    assert "symbolic link" in err
    assert not (store / "created-elsewhere").exists() and not (store / "t.db").exists()


def test_the_one_syncer_lock_is_met_through_a_link_to_the_target(store):
    fg("sync", "--from", "s.db", "--to", "two.db", cwd=store, check=True)
    os.symlink("two.db", store / "link.db")
    fd = os.open(store / "two.db.sync.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # a syncer running on two.db
        err = typed(fg("sync", "--from", "s.db", "--to", "link.db", cwd=store), "Conflict")
        assert "another `fgraph sync`" in err
    finally:
        os.close(fd)
    assert not (store / "link.db.sync.lock").exists()


@pytest.mark.parametrize("kind", ["fifo", "directory", "loop", "link"])
def test_a_cursor_that_is_not_a_regular_file_is_a_typed_error_at_once(store, kind):
    cursor = store / "t.db.sync.json"
    if kind == "fifo":
        os.mkfifo(cursor)
    elif kind == "directory":
        cursor.mkdir()
    elif kind == "loop":
        os.symlink(cursor.name, cursor)
    else:
        os.symlink(store / "elsewhere", cursor)
    started = time.monotonic()
    typed(fg("sync", "--from", "s.db", "--to", "t.db", cwd=store, timeout=20), "Conflict")   # a FIFO hung forever
    assert time.monotonic() - started < 15
    assert not (store / "t.db").exists() and (store / "elsewhere").read_bytes() == b"keep"


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-1", "0"])
def test_a_follow_interval_must_be_a_finite_positive_number(store, value):
    code, out, err = fg("sync", "--from", "s.db", "--to", "t.db", "--follow", "--interval", value, cwd=store)
    assert code == 2 and "--interval" in err and "internal error" not in err and "Traceback" not in err


def test_the_library_refuses_a_nan_interval(store):
    import fgraph.bridges.sync.files as sync
    from fgraph.core.errors import ValueTypeError
    with pytest.raises(ValueTypeError, match="interval"):
        sync.sync([str(store / "s.db")], str(store / "t.db"), follow=True, interval=float("nan"))


# ---- items 4, 10, 11: the scrub marker

def _excise(store, ref="ada"):
    return fg("--db", "s.db", "excise", ref, "--operation-id", f"op-{ref}", "--if-basis-tx",
              latest("s.db", store), cwd=store)


def test_a_planted_marker_temporary_link_is_never_written_through(store):
    os.symlink(store / "elsewhere", store / "s.db.scrub-pending.tmp")
    assert _excise(store)[0] == 0
    assert (store / "elsewhere").read_bytes() == b"keep"
    assert os.path.islink(store / "s.db.scrub-pending.tmp") and not (store / "s.db.scrub-pending").exists()


@pytest.mark.parametrize("kind", ["directory", "fifo", "link"])
def test_a_marker_path_that_is_not_a_file_refuses_the_excision_before_it_commits(store, kind):
    marker = store / "s.db.scrub-pending"
    if kind == "directory":
        marker.mkdir()
    elif kind == "fifo":
        os.mkfifo(marker)
    else:
        os.symlink(store / "elsewhere", marker)
    before = latest("s.db", store)
    err = typed(_excise(store), "Conflict")   # before: committed, then "internal error: IsADirectoryError"
    assert "nothing was erased" in err
    assert latest("s.db", store) == before and fg("--db", "s.db", "get", "ada", cwd=store)[0] == 0
    assert (store / "elsewhere").read_bytes() == b"keep"
    if kind == "link":
        return
    for args in (("doctor",), ("doctor", "--repair")):   # before: "pending since transaction None", internal error
        code, out, err = fg("--db", "s.db", *args, cwd=store, timeout=30)
        assert code == 1 and "marker cannot be read" in out and "remove that entry by hand" in out, (out, err)
        assert "internal error" not in err + out and "Traceback" not in err
    (marker.rmdir() if kind == "directory" else marker.unlink())
    assert fg("--db", "s.db", "doctor", cwd=store)[0] == 0


def test_a_damaged_marker_is_reported_and_repair_finishes_the_scrub(store):
    (store / "s.db.scrub-pending").write_bytes(b"\xff not json")
    code, out, _ = fg("--db", "s.db", "doctor", cwd=store)
    assert code == 1 and "scrub pending" in out and "repairable" in out
    fg("--db", "s.db", "doctor", "--repair", cwd=store)
    assert fg("--db", "s.db", "doctor", cwd=store)[0] == 0 and not (store / "s.db.scrub-pending").exists()


def test_a_full_disk_for_the_marker_is_a_typed_error_and_leaves_no_temporary(store, monkeypatch):
    """In process: the marker's write fails with ENOSPC (item 11); the excision rolls back."""
    import fgraph
    from fgraph.core.errors import TooLarge

    real_write = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    path = str(store / "s.db")
    with fgraph.connect(path) as db:
        basis = db.latest_tx()
        monkeypatch.setattr(os, "write", full)
        with pytest.raises(TooLarge, match="nothing was erased"):
            db.excise("ada", operation_id="full", if_basis_tx=basis)
        monkeypatch.undo()
        assert db.latest_tx() == basis and db.entity("ada")
    assert sorted(p.name for p in store.iterdir() if "scrub" in p.name) == []


def test_a_really_full_disk_for_the_marker_is_a_typed_error(tmp_path):
    """The same on a full tmpfs (needs root to mount one)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        fg("--db", "x.db", "add", '{"id":"ada","p/name":"Ada"}', cwd=mount, check=True)
        basis = latest("x.db", mount)
        with open(mount / "filler", "wb") as filler:
            try:
                while True:
                    filler.write(b"\0" * 65536)
                    filler.flush()
            except OSError:
                pass
        err = typed(fg("--db", "x.db", "excise", "ada", "--operation-id", "o", "--if-basis-tx", basis, cwd=mount))
        assert err.startswith(("TooLarge:", "FormatError:")) and "internal error" not in err
        assert [p.name for p in mount.iterdir() if "scrub" in p.name] == []
        (mount / "filler").unlink()
        assert latest("x.db", mount) == basis and fg("--db", "x.db", "get", "ada", cwd=mount)[0] == 0
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
