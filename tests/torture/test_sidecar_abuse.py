"""Sidecar abuse (issue 29): every path a command creates or replaces beside a database — the sync
cursor and lock, the scrub marker, SQLite's -wal/-shm/-journal, a backup or restore destination —
planted in advance as a symbolic link (to a file outside, to a missing path, in a loop), a FIFO, a
directory or a read-only file. Each run must end in success or a typed error, within a bound; the
file outside is byte-identical afterwards and the missing path is still missing; a refused run
leaves the database as it was. ``make test`` runs a sample of the (command, path, kind) grid, ``make
torture`` all of it."""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections import Counter

import pytest

from tests.support.torture import FULL, cli, is_typed_failure, report, rng, state

RESULTS: Counter = Counter()
KINDS = ("link-to-file", "link-to-missing", "link-loop", "fifo", "directory", "read-only-file")
VICTIM = b"outside: must not change\n"
PER_RUN_SECONDS = 30


def _excise(work):
    return ["--db", "s.db", "excise", "ada", "--operation-id", "abuse", "--if-basis-tx", str(state(work / "s.db")[0])]


#: command -> (argv builder, the paths beside the database it creates or replaces, the store it writes)
COMMANDS = {
    "add": (lambda work: ["--db", "s.db", "add", '{"id":"new","t/n":1}'], ("s.db-wal", "s.db-shm", "s.db-journal"), "s.db"),
    "excise": (_excise, ("s.db.scrub-pending", "s.db-wal"), "s.db"),
    "doctor-repair": (lambda work: ["--db", "s.db", "doctor", "--repair"],
                      ("s.db.scrub-pending", "s.db.excisions-owed", "s.db-wal"), "s.db"),
    "sync": (lambda work: ["sync", "--from", "s.db", "--to", "t.db"],
             ("t.db.sync.json", "t.db.sync.lock", "t.db-wal", "t.db-shm", "t.db"), "t.db"),
    "backup": (lambda work: ["--db", "s.db", "backup", "b.db"], ("b.db", "b.db-wal", "b.db-journal"), "s.db"),
    "restore-backup": (lambda work: ["restore-backup", "base-backup.db", "r.db"], ("r.db", "r.db-wal", "r.db-journal"),
                       "r.db"),
    "import": (lambda work: ["--db", "s.db", "import", "jsonl-log", "log.jsonl", "--skip-bad"], ("s.db-wal", "s.db-shm"), "s.db"),
}
# A link given as the database path itself is the user's own choice of where the store lives: a
# dangling one is created where it points (as SQLite and every tool does), so that cell is left out.
GRID = [(command, name, kind) for command, (_, names, store) in COMMANDS.items() for name in names for kind in KINDS
        if not (name == store and kind == "link-to-missing")]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("sidecars")
    assert cli("--db", str(root / "s.db"), "add", '[{"id":"ada","t/s":"Ada","t/n":1},{"id":"bob","t/n":2}]')[0] == 0
    assert cli("--db", str(root / "s.db"), "backup", str(root / "base-backup.db"))[0] == 0
    (root / "log.jsonl").write_text('{"id":"d1","title":"one","at":"2026-01-01T00:00:00Z"}\n')
    return root


def _plant(path, kind, outside):
    if os.path.lexists(path):
        # left by a clean close or a read: an empty WAL or a WAL index, never committed data
        assert path.name.endswith("-shm") or path.stat().st_size == 0, path
        path.unlink()
    if kind == "link-to-file":
        os.symlink(outside / "victim", path)
    elif kind == "link-to-missing":
        os.symlink(outside / "missing", path)
    elif kind == "link-loop":
        os.symlink(path.name, path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"not fgraph's\n")
        path.chmod(stat.S_IRUSR)


def _state_or_none(path):
    try:
        return state(path)
    except Exception:  # noqa: BLE001 - an absent or uninitialized store
        return None


def _chosen():
    """``make torture`` runs the whole grid; ``make test`` a fixed sample that holds every kind."""
    if FULL:
        return GRID
    chosen = rng("sidecars").sample(GRID, 24)
    return chosen + [row for kind in KINDS if not any(k == kind for *_, k in chosen)
                     for row in GRID[KINDS.index(kind)::len(KINDS)][:1]]


@pytest.mark.parametrize("command, name, kind", _chosen())
def test_a_planted_sidecar_is_never_followed_and_never_an_internal_error(base, tmp_path, command, name, kind):
    work, outside = tmp_path / "work", tmp_path / "outside"
    shutil.copytree(base, work)
    outside.mkdir()
    (outside / "victim").write_bytes(VICTIM)
    build, _, store = COMMANDS[command]
    argv = build(work)
    before = _state_or_none(work / store)
    _plant(work / name, kind, outside)
    started = time.monotonic()
    code, out, err = _run_in(work, argv)
    took = time.monotonic() - started
    RESULTS["runs"] += 1
    RESULTS["longest_ms"] = max(RESULTS["longest_ms"], int(took * 1000))
    assert (outside / "victim").read_bytes() == VICTIM, (command, name, kind, err)
    assert not os.path.lexists(outside / "missing"), (command, name, kind)
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 0:
        RESULTS["succeeded"] += 1
        return
    if command == "doctor-repair" and code == 1 and out.startswith("repaired:") and "NOT OK" in out:
        RESULTS["reported"] += 1   # doctor's own verdict: the entry is named and left alone
    else:
        assert is_typed_failure(code, out, err), (code, out, err)
        RESULTS["refused"] += 1
    if before is not None and name != store:
        _remove(work / name)
        assert _state_or_none(work / store) == before, (command, name, kind, err)


def _remove(path):
    if not os.path.lexists(path):
        return
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    else:
        path.unlink()


def _run_in(work, argv):
    previous = os.getcwd()
    os.chdir(work)
    try:
        return cli(*argv, timeout=PER_RUN_SECONDS)
    finally:
        os.chdir(previous)


#: issue 47 item 6: fgraph's own sidecar names, of the open store and of another, as a destination
OWN_NAMES = ("s.db.scrub-pending", "s.db.excisions-owed", "s.db.sync.json", "s.db.sync.lock", "s.db.signing-key",
             "s.db.vectors-3.usearch", "s.db.vectors-3.json", "x.db.sync.json", "x.db.scrub-pending")
DESTINATIONS = {
    "backup": lambda name: ["--db", "s.db", "backup", name],
    "restore-backup": lambda name: ["restore-backup", "base-backup.db", name],
    "new-db": lambda name: ["--db", name, "add", '{"id":"x"}'],
    "sync-to": lambda name: ["sync", "--from", "s.db", "--to", name],
}


@pytest.mark.parametrize("planted", ["nothing", "someones-file"])
@pytest.mark.parametrize("command", sorted(DESTINATIONS))
def test_no_command_writes_under_one_of_fgraphs_own_sidecar_names(base, tmp_path, command, planted):
    """Each name refused with a typed Conflict before anything is written: a file already there is
    byte-identical, nothing new appears, the store is as it was (before: backup published there)."""
    work = tmp_path / "work"
    shutil.copytree(base, work)
    before = state(work / "s.db")
    for name in OWN_NAMES:
        if planted == "someones-file":
            (work / name).write_bytes(VICTIM)
        listing = sorted(p.name for p in work.iterdir())
        code, out, err = _run_in(work, DESTINATIONS[command](name))
        RESULTS["runs"] += 1
        assert is_typed_failure(code, out, err), (command, name, err)
        if planted == "nothing" or command in ("backup", "restore-backup"):
            assert err.startswith("Conflict:") and "is named like the" in err, (command, name, err)
        # else a file with data there is opened as the store it claims to be, and refused as no database
        RESULTS["refused"] += 1
        assert sorted(p.name for p in work.iterdir()) == listing, (command, name)
        if planted == "someones-file":
            assert (work / name).read_bytes() == VICTIM, (command, name)
            (work / name).unlink()
    assert state(work / "s.db") == before


def test_zz_sidecar_summary():
    if not RESULTS["runs"]:
        pytest.skip("no sidecar run in this selection")
    report("sidecars", Counter({**RESULTS, "lost": 0, "partial": 0, "tracebacks": 0, "hangs": 0}),
           grid=len(GRID))
