"""Disks that fill up for real: RLIMIT_FSIZE (``ulimit -f``) swept across every writing command, and
``PRAGMA max_page_count`` swept across the library's writers. Each run ends in success or a typed
error naming the cause; afterwards the database is clean under doctor and either unchanged or
exactly the uninterrupted result (nothing half-written)."""

from __future__ import annotations

import json
import os
import resource
import shutil
from collections import Counter

import pytest

import fgraph
from tests.support.cli import run_cli
from tests.support.clock import stepping_clock
from tests.support.torture import cli, content, is_typed_failure, report, size, verdict

RESULTS: Counter = Counter()
COMMANDS = ("add", "add-batch", "apply", "restore", "backup", "restore-backup", "excise", "undo", "declare",
            "retract", "doctor-repair")


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    root = tmp_path_factory.mktemp("full")
    records = [{"id": f"e{i}", "t/s": "x" * 300, "t/n": i} for i in range(600)]
    (root / "in.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "more.ndjson").write_text("".join(json.dumps({"id": f"m{i}", "t/s": "y" * 200}) + "\n"
                                              for i in range(800)))
    db = root / "base.db"
    assert cli("--db", str(db), "add", "--batch-size", "100", f"@{root / 'in.ndjson'}")[0] == 0
    code, out, _ = cli("--db", str(db), "add", '{"id":"late","t/n":-1}')
    (root / "late-tx").write_text(str(json.loads(out)["tx"]))
    for name, args in (("events", ("tail",)), ("snap", ("snapshot",))):
        code, out, err = cli("--db", str(db), *args)
        (root / name).write_text(out)
    assert cli("--db", str(db), "backup", str(root / "backup.db"))[0] == 0
    return root


def _command(kind, root, target):
    late = (root / "late-tx").read_text()
    return {"add": ["--db", str(target), "add", json.dumps([{"id": f"w{i}", "t/s": "z" * 500} for i in range(100)])],
            "add-batch": ["--db", str(target), "add", "--batch-size", "800", f"@{root / 'more.ndjson'}"],
            "apply": ["--db", str(target), "apply", str(root / "events")],
            "restore": ["--db", str(target), "restore", str(root / "snap")],
            "backup": ["--db", str(root / "work" / "source.db"), "backup", str(target)],
            "restore-backup": ["restore-backup", str(root / "backup.db"), str(target)],
            "excise": ["--db", str(target), "excise", "e7", "--operation-id", "x", "--if-basis-tx", late],
            "undo": ["--db", str(target), "undo", late],
            "declare": ["--db", str(target), "declare", "t/n", "--type", "int"],
            "retract": ["--db", str(target), "retract", "e3"],
            "doctor-repair": ["--db", str(target), "doctor", "--repair"]}[kind]


def _prepare(kind, root):
    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    target = work / "target.db"
    if kind in ("add", "add-batch", "excise", "undo", "declare", "retract", "doctor-repair"):
        shutil.copy(root / "base.db", target)
    if kind == "backup":
        shutil.copy(root / "base.db", work / "source.db")
    return target


def _limited(limit: int, args) -> tuple[int, str, str]:
    def apply_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    code, out, err = run_cli(*args, text=False, timeout=120, preexec_fn=apply_limit)
    return code, out.decode(), err.decode()


def _files_size(directory) -> int:
    return max([os.path.getsize(directory / name) for name in os.listdir(directory)] + [4096])


@pytest.mark.parametrize("kind", COMMANDS)
def test_ulimit_f_sweep(kind, material):
    target = _prepare(kind, material)
    before = content(target) if target.exists() else None
    code, _, err = cli(*_command(kind, material, target))
    assert code == 0, err
    expected = content(target)
    largest = _files_size(target.parent)
    counts = Counter()
    steps = size(1, 60)
    for step in range(steps):
        limit = 4096 + (largest - 4096) * (step + 1) // (steps + 1)
        target = _prepare(kind, material)
        code, out, err = _limited(limit, _command(kind, material, target))
        counts["runs"] += 1
        if code == 0:
            counts["succeeded"] += 1
        else:
            assert is_typed_failure(code, out, err), (limit, err)
            assert "internal error" not in err and "not an error" not in err
            counts[f"typed_{err.split(':')[0]}"] += 1
        if kind in ("backup", "restore-backup"):
            if target.exists():
                assert code == 0 and content(target) == expected
            assert not [n for n in os.listdir(target.parent) if n.startswith(".")], "scratch left behind"
            continue
        if target.exists():
            found = verdict(target)
            if found == "uninitialized" and kind in ("apply", "restore"):
                counts["uninitialized"] += 1
                continue
            if found == "scrub_owed" and kind == "excise":
                counts["scrub_owed"] += 1
                assert cli("--db", str(target), "doctor", "--repair")[0] == 0
                found = verdict(target)
            assert found == "ok", f"{kind} under a {limit}-byte limit left a database doctor rejects: {found}"
            now = content(target)
            assert now == expected or now == before or (before is None and now[0] == 1), \
                f"{kind} under a {limit}-byte limit left a partial state"
            counts["complete" if now == expected else "unchanged"] += 1
    RESULTS.update(counts)
    report("disk-full(ulimit)", RESULTS, commands=len(COMMANDS))


PAGE_RESULTS: Counter = Counter()


@pytest.mark.parametrize("work", ["transact", "apply", "restore"])
def test_max_page_count_sweep(work, material, tmp_path):
    counts = Counter()
    for extra in range(0, size(40, 400), max(1, size(40, 400) // size(8, 100))):
        path = tmp_path / f"p{extra}.db"
        if work == "transact":
            shutil.copy(material / "base.db", path)
        with fgraph.connect(str(path), clock=stepping_clock()) as db:
            pages = db.connection.execute("PRAGMA page_count").fetchone()[0]
            before = (db.latest_tx(), db.logical_digest())
            db.connection.execute(f"PRAGMA max_page_count = {pages + extra}")
            try:
                if work == "transact":
                    db.transact([{"id": f"n{i}", "t/s": "q" * 400} for i in range(200)])
                elif work == "apply":
                    with open(material / "events", "rb") as source:
                        db.apply(source)
                else:
                    with open(material / "snap", "rb") as source:
                        db.restore(source)
                counts["succeeded"] += 1
            except fgraph.TooLarge as exc:
                assert "full" in str(exc)
                counts["typed_TooLarge"] += 1
                assert (db.latest_tx(), db.logical_digest()) == before
            assert db.doctor()["ok"]
        counts["runs"] += 1
    assert counts["typed_TooLarge"] > 0
    PAGE_RESULTS.update(counts)
    report("disk-full(max_page_count)", PAGE_RESULTS)
