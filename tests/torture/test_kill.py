"""kill -9 at random moments of every writing command: afterwards doctor is clean, the operation
happened entirely or not at all, a retry converges on the uninterrupted result, no stray files
remain, and an excised canary is either gone from every byte of the files or owed a scrub that
doctor reports."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import Counter

import pytest

from tests.support.torture import FGRAPH, cli, content, report, rng, size, verdict, wait_for

CANARY = "canary-7f3a9c-secret"
KINDS = ("add", "add-batch", "apply", "restore", "backup", "restore-backup", "excise", "undo", "doctor-repair")
RESULTS: Counter = Counter()


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A store of 300 entities (one with the canary), its events, snapshot and backup, and inputs."""
    root = tmp_path_factory.mktemp("kill")
    records = [{"id": f"e{i}", "t/s": "x" * 300, "t/n": i} for i in range(300)]
    records[7]["t/secret"] = CANARY
    (root / "in.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "more.ndjson").write_text("".join(json.dumps({"id": f"m{i}", "t/n": i}) + "\n" for i in range(300)))
    db = root / "base.db"
    assert cli("--db", str(db), "add", "--batch-size", "50", f"@{root / 'in.ndjson'}")[0] == 0
    for name, args in (("events", ("tail",)), ("snap", ("snapshot",))):
        code, out, err = cli("--db", str(db), *args)
        assert code == 0, err
        (root / name).write_text(out)
    code, out, err = cli("--db", str(db), "add", '{"id":"late","t/n":-1}')
    assert code == 0, err
    (root / "undo-tx").write_text(str(json.loads(out)["tx"]))
    assert cli("--db", str(db), "backup", str(root / "backup.db"))[0] == 0
    return root


def _command(kind: str, root, target) -> list[str]:
    return {"add": ["--db", str(target), "add", f"@{root / 'more.ndjson'}"],
            "add-batch": ["--db", str(target), "add", "--batch-size", "300", f"@{root / 'more.ndjson'}"],
            "apply": ["--db", str(target), "apply", str(root / "events")],
            "restore": ["--db", str(target), "restore", str(root / "snap")],
            "backup": ["--db", str(target.parent / "source.db"), "backup", str(target)],
            "restore-backup": ["restore-backup", str(root / "backup.db"), str(target)],
            "excise": ["--db", str(target), "excise", "e7", "--operation-id", "torture-excise",
                       "--if-basis-tx", (root / "undo-tx").read_text()],
            "undo": ["--db", str(target), "undo", (root / "undo-tx").read_text(), "--operation-id", "torture-undo"],
            "doctor-repair": ["--db", str(target), "doctor", "--repair"]}[kind]


def _prepare(kind: str, root, cycle_dir):
    target = cycle_dir / "target.db"
    if kind in ("add", "add-batch", "excise", "undo", "doctor-repair"):
        shutil.copy(root / "base.db", target)
    if kind == "backup":
        shutil.copy(root / "base.db", cycle_dir / "source.db")
    return target


def _files(directory) -> set[str]:
    return {name for name in os.listdir(directory)}


def _canary_hits(target) -> int:
    hits = 0
    for suffix in ("", "-wal", "-journal"):
        path = f"{target}{suffix}"
        if os.path.exists(path):
            with open(path, "rb") as handle:
                hits += handle.read().count(CANARY.encode())
    return hits


def _reference(kind: str, root, tmp_path) -> tuple[int, str]:
    """The state an uninterrupted run of ``kind`` ends in."""
    ref_dir = tmp_path / f"ref-{kind}"
    ref_dir.mkdir()
    target = _prepare(kind, root, ref_dir)
    code, _, err = cli(*_command(kind, root, target))
    assert code == 0, err
    return content(target)


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_at_random_moments(kind, template, tmp_path):
    random = rng(f"kill-{kind}")
    expected = _reference(kind, template, tmp_path)
    before = content(template / "base.db") if kind in ("add", "add-batch", "excise", "undo", "doctor-repair") else None
    started = time.monotonic()
    subprocess.run([FGRAPH, *_command(kind, template, _prepare(kind, template, _fresh(tmp_path, "timing")))],
                   capture_output=True)
    duration = time.monotonic() - started
    counts = Counter()
    for cycle in range(size(1, 200)):
        cycle_dir = _fresh(tmp_path, f"c{cycle}")
        target = _prepare(kind, template, cycle_dir)
        files_before = _files(cycle_dir)
        proc = subprocess.Popen([FGRAPH, *_command(kind, template, target)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(0.0, duration * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        counts["cycles"] += 1
        counts["killed" if proc.returncode == -signal.SIGKILL else "finished"] += 1
        uninitialized = target.exists() and kind in ("apply", "restore") and verdict(target) == "uninitialized"
        if uninitialized:
            counts["uninitialized"] += 1   # killed between SQLite creating the file and genesis: still "new"
        elif target.exists() and kind not in ("backup", "restore-backup"):
            found = verdict(target)
            if found == "scrub_owed" and kind == "excise":
                counts["scrub_owed"] += 1   # committed, killed during its scrub: doctor says so
            else:
                assert found == "ok", f"{kind} cycle {cycle}: doctor after kill -9: {found}"
            now = content(target)
            if now == expected:
                counts["complete"] += 1
            elif kind == "add" and before[0] < now[0] < expected[0]:
                counts["committed_prefix"] += 1   # plain NDJSON: one transaction per line (spec 09 §4.1)
            else:  # all or nothing: a killed run leaves the state it started from
                assert now == before or (kind in ("apply", "restore") and now[0] == 1), \
                    f"{kind} cycle {cycle}: partial state {now}"
                counts["nothing"] += 1
            if kind == "excise" and now == expected and _canary_hits(target):
                # canary bytes may remain only while doctor reports the owed scrub
                assert found == "scrub_owed", f"excise cycle {cycle}: canary bytes remain, doctor silent"
                counts["canary_hits_owed_scrub"] += 1
            elif kind == "excise" and now == expected:
                counts["canary_gone"] += 1
        elif kind in ("backup", "restore-backup") and target.exists():
            assert content(target) == expected, f"{kind} cycle {cycle}: a partial copy was published"
            counts["complete"] += 1
        else:
            counts["nothing"] += 1
        # a retry converges on the uninterrupted result
        if kind in ("backup", "restore-backup") and target.exists():
            pass
        elif kind == "restore" and target.exists() and not uninitialized and content(target)[0] != 1:
            pass  # restored, so not pristine: a second restore would be refused
        else:
            code, _, err = cli(*_command(kind, template, target))
            assert code == 0, f"{kind} cycle {cycle}: the retry failed: {err}"
        if kind not in ("backup", "restore-backup") or target.exists():
            assert content(target) == expected, f"{kind} cycle {cycle}: retry did not converge"
        def strays() -> set[str]:
            return {name for name in _files(cycle_dir) - files_before
                    if name.startswith(".") or not name.startswith(("target.db", "source.db"))}
        wait_for(lambda: not strays(), timeout=10)   # backup's watchdog removes a killed copy's scratch
        stray = strays()
        counts["stray_files"] += len(stray)
        assert not stray, f"{kind} cycle {cycle}: stray files {sorted(stray)}"
    RESULTS.update({f"{kind}:{key}": value for key, value in counts.items()})
    report("kill-9", Counter({key.split(":")[1]: 0 for key in RESULTS}) + _totals(),
           kinds=len({key.split(":")[0] for key in RESULTS}))


def _totals() -> Counter:
    totals = Counter()
    for key, value in RESULTS.items():
        totals[key.split(":")[1]] += value
    return totals


def _fresh(tmp_path, name):
    path = tmp_path / name
    path.mkdir()
    return path
