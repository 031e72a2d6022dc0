"""Hostile input: mutated event streams, snapshots and ``add`` documents (byte flips, deletions,
duplications, swaps, truncations and structure-aware edits of a parsed record, re-sealed or not),
and hostile paths. Each must end in success or a typed error, leave a refused database unchanged
(same logical digest), never hang, and never show a traceback."""

from __future__ import annotations

import os
import shutil
import signal
import stat
from collections import Counter

import pytest

import fgraph
from tests.support.clock import stepping_clock
from tests.support.torture import cli, is_typed_failure, report, rng, size
from tests.support.mutations import edit, mutate, random_json

PER_CALL_SECONDS = 20
RESULTS: Counter = Counter()


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    with fgraph.connect(str(root / "source.db"), clock=stepping_clock()) as db:
        db.declare("t/friend", type="ref", many=True)
        db.declare("t/email", type="text", unique=True)
        for i in range(8):
            db.transact([{"id": f"p{i}", "t/n": i, "t/s": f"person {i} é ✓", "t/email": f"p{i}@x",
                          "t/v": {"vector": [0.5, i / 3]}, "t/when": {"instant": "2026-01-01T00:00:00Z"},
                          "t/friend": [{"ref": f"p{(i + 1) % 8}"}] if i else []}])
        db.retract("p3", "t/s")
        events = "".join(line if line.endswith("\n") else line + "\n" for line in db.iter_events())
        snapshot = db.snapshot()
    return {"events": events, "snapshot": snapshot}


def _attempt(call, db, counts: Counter, what: str) -> None:
    before = (db.latest_tx(), db.logical_digest())
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(PER_CALL_SECONDS)
    try:
        call()
        counts[f"{what}_accepted"] += 1
        assert db.doctor()["ok"]
    except fgraph.FgraphError as exc:
        counts[f"{what}_rejected"] += 1
        assert (db.latest_tx(), db.logical_digest()) == before, f"a refused {what} changed the database: {exc}"
    except Hang:
        counts["hangs"] += 1
        raise AssertionError(f"{what} hung for {PER_CALL_SECONDS} s") from None
    finally:
        signal.alarm(0)


@pytest.mark.parametrize("what", ["apply", "restore", "add"])
def test_mutated_inputs_end_typed_and_change_nothing_when_refused(what, material, tmp_path):
    random = rng(f"hostile-{what}")
    counts = Counter()
    for round_number in range(size(20, 3400)):
        path = str(tmp_path / f"{round_number}.db")
        with fgraph.connect(path, clock=stepping_clock()) as db:
            if what == "apply":
                data = mutate(material["events"], random, sealed=False)
                _attempt(lambda: db.apply(data), db, counts, what)
            elif what == "restore":
                data = mutate(material["snapshot"], random, sealed=random.random() < 0.5)
                _attempt(lambda: db.restore(data), db, counts, what)
            else:
                db.transact({"id": "seed", "t/n": 1})
                document = edit({"id": "x", "t/n": 2, "t/s": "text"}, random) if random.random() < 0.7 \
                    else random_json(random)
                _attempt(lambda: db.transact(document), db, counts, what)
        os.unlink(path)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
    counts["inputs"] = sum(counts.values())
    RESULTS.update(counts)
    report("hostile-input", RESULTS)
    assert counts[f"{what}_rejected"] > 0


def _hostile_paths(tmp_path) -> dict[str, str]:
    good = tmp_path / "good.db"
    assert cli("--db", str(good), "add", '{"id":"a","t/n":1}')[0] == 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    directory = tmp_path / "dir"
    directory.mkdir()
    link = tmp_path / "link-to-fifo"
    os.symlink(fifo, link)
    dangling = tmp_path / "dangling"
    os.symlink(tmp_path / "missing" / "x.db", dangling)
    readonly_dir = tmp_path / "ro"
    readonly_dir.mkdir()
    os.chmod(readonly_dir, stat.S_IRUSR | stat.S_IXUSR)
    wal_dir = tmp_path / "waldir"
    wal_dir.mkdir()
    shutil.copy(good, wal_dir / "x.db")
    os.mkdir(wal_dir / "x.db-wal")
    stale = tmp_path / "stale"
    stale.mkdir()
    shutil.copy(good, stale / "x.db")
    (stale / "x.db-wal").write_bytes(os.urandom(40_000))     # leftover sidecars full of noise
    (stale / "x.db-shm").write_bytes(os.urandom(32_768))
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"SQLite format 3\x00" + os.urandom(5000))
    text = tmp_path / "text.db"
    text.write_text("hello\n" * 100)
    return {"fifo": str(fifo), "dir": str(directory), "link-to-fifo": str(link), "dangling": str(dangling),
            "missing-dir": str(tmp_path / "no" / "such" / "x.db"), "/dev/null": "/dev/null",
            "/dev/zero": "/dev/zero", "/proc/self/status": "/proc/self/status",
            "readonly-dir": str(readonly_dir / "x.db"), "wal-is-dir": str(wal_dir / "x.db"),
            "stale-sidecars": str(stale / "x.db"), "junk": str(junk), "text": str(text)}


COMMANDS = (("info",), ("doctor",), ("snapshot",), ("tail",), ("add", '{"id":"b","t/n":2}'),
            ("q", '{"find":["?e"],"where":[["?e","t/n",1]]}'), ("backup", "__dest__"))


def test_hostile_paths_are_refused_typed_and_at_once(tmp_path):
    counts = Counter()
    for name, path in _hostile_paths(tmp_path).items():
        for command in COMMANDS:
            args = [str(tmp_path / f"copy-{name.strip('/').replace('/', '-')}.db") if a == "__dest__" else a
                    for a in command]
            code, out, err = cli("--db", path, *args, timeout=PER_CALL_SECONDS)
            counts["calls"] += 1
            if code == 0:
                counts["accepted"] += 1   # a writable open of a read-only directory as root, say
                assert name in ("readonly-dir", "stale-sidecars"), (name, command, out)
                continue
            assert is_typed_failure(code, out, err), (name, command, code, err)
            counts["typed"] += 1
    assert not os.path.exists("/dev/null-journal") and not os.path.exists("/dev/null-wal")
    report("hostile-paths", counts)
