"""Regressions of issue 29's sidecar findings, through the real CLI on real files: no backup or new
database takes the name of another database's journal, WAL or shared memory; the sync cursor and
lock and the scrub marker are never written, created or read through a link, never block on a FIFO,
and a directory, FIFO or full disk where they go is a typed error that leaves the database as it was.
Each test failed before its fix (issue 29 items 1, 3-6, 9-12). Issue 47 item 6: no backup, restored
copy or new database takes any of fgraph's own sidecar names (fgraph.core.sidecars), and doctor
--repair removes a marker only when its content proves it is fgraph's."""

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


# ---- issue 47 item 6: every sidecar name of any store, fgraph's own included

#: one name of each kind fgraph.core.sidecars lists, as a sidecar of a store `t.db` (t.db itself need not exist)
OWN_SIDECARS = ["t.db.scrub-pending", "t.db.excisions-owed", "t.db.sync.json", "t.db.sync.lock", "t.db.signing-key",
                "t.db.sync-keys.json", "t.db.sync-provenance", "t.db.vectors-7.usearch", "t.db.vectors-7.json",
                ".t.db.sync.json.4242.ab12cd.tmp"]


def test_the_list_holds_every_name_fgraph_writes_beside_a_store():
    from fgraph.core import sidecars
    from fgraph.ops import propagate, scrub
    from fgraph.bridges.sync import files as sync_files
    from fgraph.query.search import vector_index
    written = {scrub.marker_path("t.db"), propagate.owed_path("t.db"), sync_files.cursor_path("t.db"),
               "t.db" + sync_files.LOCK_SUFFIX, *vector_index.paths("t.db", 7)}
    assert {sidecars.sidecar_role(name)[0] for name in written} == {"t.db"}
    for suffix in sidecars.SQLITE_SIDECARS:
        assert sidecars.sidecar_role("t.db" + suffix) == ("t.db", sidecars.SUFFIXES[suffix])
    assert sidecars.sidecar_role(".t.db.sync.json.4242.ab12cd.tmp") == ("t.db.sync.json", "temporary of an atomic write")


@pytest.mark.parametrize("name", ["s.db-journal", "s.db-wal", "s.db-shm", "x-wal"])
def test_a_new_file_may_not_take_a_sqlite_sidecar_name(tmp_path, name):
    from fgraph.core.errors import Conflict
    from fgraph.core.sidecars import refuse_sidecar_name
    with pytest.raises(Conflict, match="SQLite would take it for part of that database"):
        refuse_sidecar_name(str(tmp_path / name), "backup destination")


@pytest.mark.parametrize("name", OWN_SIDECARS)
def test_a_new_file_may_not_take_one_of_fgraphs_own_sidecar_names(tmp_path, name):
    from fgraph.core.errors import Conflict
    from fgraph.core.sidecars import refuse_sidecar_name
    with pytest.raises(Conflict, match="as that database's own; choose a name that does not end in any of"):
        refuse_sidecar_name(str(tmp_path / name), "backup destination")


@pytest.mark.parametrize("name", ["s.db", "wal", "-wal", "s.db.wal", "journal.db", ".scrub-pending", "s.json",
                                  "s.vectors-x.json", "s.sync", "notes.tmp", ".s.db.tmp"])
def test_ordinary_names_pass(tmp_path, name):
    from fgraph.core.sidecars import refuse_sidecar_name
    refuse_sidecar_name(str(tmp_path / name), "backup destination")


def _nothing_at(store, name) -> None:
    assert not os.path.lexists(store / name), name
    assert not [p.name for p in store.iterdir() if p.name.startswith(f".{name}.")], name   # no scratch left either


@pytest.mark.parametrize("name", OWN_SIDECARS)
def test_a_backup_under_any_sidecar_name_is_refused_and_nothing_is_written(store, name):
    err = typed(fg("--db", "s.db", "backup", name, cwd=store), "Conflict")
    assert "is named like the" in err and "choose a name" in err
    _nothing_at(store, name)
    same = name.replace("t.db", "s.db", 1)   # the open store's own sidecar name
    typed(fg("--db", "s.db", "backup", same, cwd=store), "Conflict")
    _nothing_at(store, same)
    for args in (("doctor",), ("get", "ada")):
        assert fg("--db", "s.db", *args, cwd=store)[0] == 0, args


@pytest.mark.parametrize("name", OWN_SIDECARS)
def test_restore_backup_onto_any_sidecar_name_is_refused(store, name):
    fg("--db", "s.db", "backup", "b.db", cwd=store, check=True)
    typed(fg("restore-backup", "b.db", name, cwd=store), "Conflict")
    _nothing_at(store, name)


@pytest.mark.parametrize("name", OWN_SIDECARS)
def test_no_new_database_is_created_under_any_sidecar_name(store, name):
    (store / "s.ndjson").write_bytes(fg("--db", "s.db", "snapshot", cwd=store, check=True)[1].encode())
    (store / "log.jsonl").write_text('{"id":"d1","title":"one","at":"2026-01-01T00:00:00Z"}\n')
    for argv in (("--db", name, "add", '{"id":"x"}'), ("--db", name, "init"), ("--db", name, "restore", "s.ndjson"),
                 ("--db", name, "import", "jsonl-log", "log.jsonl"), ("sync", "--from", "s.db", "--to", name)):
        typed(fg(*argv, cwd=store), "Conflict")
        _nothing_at(store, name)
        assert not [p.name for p in store.iterdir() if p.name.startswith(name)], argv   # no lock, cursor or -wal


def test_the_library_refuses_the_same_names(store):
    import fgraph
    from fgraph.core.errors import Conflict
    with fgraph.connect(str(store / "s.db")) as db:
        with pytest.raises(Conflict):
            db.backup(str(store / "s.db.scrub-pending"))
    with pytest.raises(Conflict):
        fgraph.connect(str(store / "n.db.sync.json"))
    assert not (store / "s.db.scrub-pending").exists() and not (store / "n.db.sync.json").exists()


@pytest.mark.parametrize("marker", ["s.db.scrub-pending", "s.db.excisions-owed"])
def test_doctor_repair_never_removes_a_verified_backup_under_a_markers_name(store, marker):
    fg("--db", "s.db", "backup", "b.db", cwd=store, check=True)
    backup = (store / "b.db").read_bytes()
    (store / marker).write_bytes(backup)                    # put there by hand (cp): fgraph refuses to
    for args in (("doctor",), ("doctor", "--repair")):
        code, out, err = fg("--db", "s.db", *args, cwd=store, timeout=60)
        assert code == 1 and "NOT OK" in out and "Traceback" not in err and "internal error" not in err, (out, err)
        assert "left alone" in out or "is not an fgraph owed-excisions note" in out, out
        assert "move it elsewhere if it is a file of yours" in out, out
        assert (store / marker).read_bytes() == backup, args
    assert fg("--db", str(store / marker), "doctor", cwd=store)[0] == 0    # still a verified backup
    (store / marker).unlink()
    assert fg("--db", "s.db", "doctor", cwd=store)[0] == 0


def test_an_excision_refuses_to_take_over_a_file_that_is_not_its_marker(store):
    (store / "s.db.scrub-pending").write_bytes(b"SQLite format 3\x00 not a marker")
    before = latest("s.db", store)
    err = typed(_excise(store), "Conflict")
    assert "is not fgraph's scrub marker" in err and "nothing was erased" in err
    assert latest("s.db", store) == before and fg("--db", "s.db", "get", "ada", cwd=store)[0] == 0
    assert (store / "s.db.scrub-pending").read_bytes() == b"SQLite format 3\x00 not a marker"


@pytest.mark.parametrize("content", ['{"fgraph":"fgraph-scrub-pending/1","since":1.5,"tx":TX}',
                                     '{"tx": TX, "since": 1.5}'])   # today's marker, and an earlier fgraph's
def test_doctor_repair_still_removes_a_real_marker(store, content):
    (store / "s.db.scrub-pending").write_text(content.replace("TX", str(latest("s.db", store))))
    code, out, _ = fg("--db", "s.db", "doctor", cwd=store)
    assert code == 1 and "scrub pending" in out and "repairable" in out
    assert fg("--db", "s.db", "doctor", "--repair", cwd=store)[0] == 0
    assert not (store / "s.db.scrub-pending").exists() and fg("--db", "s.db", "doctor", cwd=store)[0] == 0


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


def test_a_marker_that_does_not_prove_itself_is_reported_and_left_alone(store):
    """Issue 47 item 6 (decision S1): markers are written atomically, so one is never torn; a file
    there that does not say it is fgraph's marker may be someone's file, and repair leaves it."""
    (store / "s.db.scrub-pending").write_bytes(b"\xff not json")
    code, out, _ = fg("--db", "s.db", "doctor", cwd=store)
    assert code == 1 and "is not fgraph's scrub marker" in out and "left alone" in out
    code, out, _ = fg("--db", "s.db", "doctor", "--repair", cwd=store)
    assert code == 1 and out.startswith("repaired:") and "NOT OK" in out
    assert (store / "s.db.scrub-pending").read_bytes() == b"\xff not json"
    (store / "s.db.scrub-pending").unlink()
    assert fg("--db", "s.db", "doctor", cwd=store)[0] == 0


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
        with open(mount / "filler", "wb", buffering=0) as filler:   # unbuffered: closing it never flushes onto a full disk
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
