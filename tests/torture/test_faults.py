"""Faults below SQLite: an APSW VFS fails the Nth read, write, sync or truncate (once or from then on),
writes half a page, or reports a full disk, swept across a transaction, an apply, a restore and a
backup. Every fault must end in success or a typed error, and afterwards (faults off, a new handle)
the database must be unchanged by a failed call (same logical digest) and clean under doctor."""

from __future__ import annotations

import os
import shutil
from collections import Counter

import pytest

import fgraph
from tests.support.clock import stepping_clock
from tests.support import faultvfs
from tests.support.torture import report, rng, size

RESULTS: Counter = Counter()
MODES = (("io", False), ("io", True), ("full", False), ("short", False))


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    """A source store, its event stream and snapshot (made without faults)."""
    root = tmp_path_factory.mktemp("faults")
    with fgraph.connect(str(root / "source.db"), clock=stepping_clock()) as db:
        for batch in range(6):
            db.transact([{"id": f"e{batch}-{i}", "t/s": "x" * 400, "t/n": i} for i in range(40)])
        with open(root / "events", "w", encoding="utf-8") as out:
            for line in db.iter_events():
                out.write(line if line.endswith("\n") else line + "\n")
        with open(root / "snap", "w", encoding="utf-8") as out:
            db.snapshot(out)
    return root


def _workloads(root, target):
    def transact(db):
        db.transact([{"id": f"n{i}", "t/s": "y" * 300, "t/n": i} for i in range(60)])

    def apply(db):
        with open(root / "events", "rb") as source:
            db.apply(source)

    def restore(db):
        with open(root / "snap", "rb") as source:
            db.restore(source)

    def backup(db):
        db.backup(str(target.parent / "copy.db"))

    return {"transact": transact, "apply": apply, "restore": restore, "backup": backup}


def _prepare(name: str, root, target) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{target}{suffix}"):
            os.unlink(f"{target}{suffix}")
    if os.path.exists(target.parent / "copy.db"):
        os.unlink(target.parent / "copy.db")
    if name in ("transact", "backup"):
        shutil.copy(root / "source.db", target)
    else:
        fgraph.connect(str(target), clock=stepping_clock()).close()


def _digest(path) -> tuple[int, str]:
    with fgraph.connect(str(path), read_only=True) as db:
        report_ = db.doctor()
        assert report_["ok"], report_
        return db.latest_tx(), db.logical_digest()


def _run(work, target, kind=None, nth=0, persistent=False, mode="io") -> tuple[str, dict]:
    """Run one workload with the fault VFS as SQLite's default: 'ok' or the typed error's name, and
    the operations counted. Checks run afterwards through the normal VFS."""
    outcome = "ok"
    with faultvfs.installed() as vfs:
        vfs.plan(kind, nth, persistent=persistent, mode=mode)
        try:
            db = fgraph.connect(str(target), clock=stepping_clock(2_000_000_000_000_000))
        except fgraph.FgraphError as exc:
            return exc.name, dict(vfs.counts)
        try:
            work(db)
        except fgraph.FgraphError as exc:
            outcome = exc.name
        finally:
            counts = dict(vfs.counts)
            vfs.plan()  # faults off before closing: a close that cannot write is another test
            try:
                db.close()
            except fgraph.FgraphError:
                pass
    return outcome, counts


@pytest.mark.parametrize("name", ["transact", "apply", "restore", "backup"])
def test_every_fault_ends_typed_and_leaves_the_database_unchanged(name, material, tmp_path):
    random = rng(f"faults-{name}")
    target = tmp_path / "target.db"
    work = _workloads(material, target)[name]
    _prepare(name, material, target)
    before = _digest(target)
    outcome, totals = _run(work, target)
    assert outcome == "ok"
    after = _digest(target)
    counts = Counter()
    for kind in faultvfs.KINDS:
        for mode, persistent in MODES:
            if mode == "short" and kind != "write":
                continue
            points = list(range(1, totals[kind] + 1))
            chosen = points if len(points) <= size(3, 40) else sorted(random.sample(points, size(3, 40)))
            for nth in chosen:
                _prepare(name, material, target)
                outcome, _ = _run(work, target, kind, nth, persistent, mode)
                counts["faults"] += 1
                now = _digest(target)
                if outcome == "ok":
                    counts["succeeded"] += 1   # e.g. a failed read SQLite retried, or a sync after commit
                    assert now[0] in (before[0], after[0]), (kind, mode, nth, now)
                else:
                    counts[f"typed_{outcome}"] += 1
                    assert now == before, f"{name}: {kind} #{nth} ({mode}) changed the database"
                    if name == "backup":
                        assert not (target.parent / "copy.db").exists()
    assert counts["faults"] > 0
    RESULTS.update(counts)
    report("faults", RESULTS)
