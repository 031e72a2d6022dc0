"""Proves streams/restore/absent.py: the filter never says "surely absent" of a name or gid it
holds (the destination's rows and every row restore registers), and a restore that skips the
registry query on its "no" ends exactly as one that asks SQLite every time."""

from __future__ import annotations

import os
import random

import fgraph
from fgraph.streams.restore import registry as restore_registry
from fgraph.streams.restore import absent as restore_absent
from fgraph.streams.restore.absent import Absent
from tests.support.mutations import mutate
from tests.support.restore_outcome import restore_outcome


def test_no_false_negatives_and_mostly_true_negatives():
    rng = random.Random(3)
    absent = Absent()
    held = [f"name-{rng.random()}" for _ in range(20000)] + [os.urandom(16) for _ in range(20000)]
    for key in held:
        absent.add(key)
    assert not any(absent.surely_absent(key) for key in held)
    others = [f"other-{rng.random()}" for _ in range(5000)] + [os.urandom(16) for _ in range(5000)]
    assert sum(absent.surely_absent(key) for key in others) > 9900


def test_it_starts_with_every_registered_name_and_gid():
    with fgraph.connect(":memory:") as db:
        db.transact({"id": "ada", "p/n": 1})
        rows = db.connection.execute("SELECT name, gid FROM fgraph_ids").fetchall()
        absent = Absent(db.connection)
    assert any(name == "ada" for name, _ in rows) and any(gid is not None for _, gid in rows)
    for name, gid in rows:
        assert name is None or not absent.surely_absent(name)
        assert gid is None or not absent.surely_absent(gid)
    assert absent.surely_absent("bob")


def test_a_full_filter_still_answers_right(monkeypatch):
    monkeypatch.setattr(restore_absent, "BITS", 64)
    monkeypatch.setattr(restore_absent, "MASK", 63)
    absent = Absent()
    for k in range(500):
        absent.add(f"n{k}")
    assert not any(absent.surely_absent(f"n{k}") for k in range(500))


# -- whole restores, with the filter and with a query every time -----------------------------
def _snapshot() -> str:
    with fgraph.connect(":memory:") as db:
        db.declare("p/knows", ref=True, many=True)
        for i in range(6):
            db.transact([{"id": f"e{i}", "p/n": f"v{i}", "p/knows": {"ref": f"e{i // 2}"}}, {"p/anon": i}])
            db.transact(["retract", f"e{i}", "p/n", f"v{i}"])
        return "".join(line + "\n" for line in db.iter_snapshot())


class _AlwaysMaybe(Absent):
    def surely_absent(self, key) -> bool:
        return False


def _both(tmp_path, monkeypatch, data: bytes, label: str):
    monkeypatch.setattr(restore_registry, "Absent", Absent)
    filtered = restore_outcome(tmp_path / f"{label}-filter.db", data)
    monkeypatch.setattr(restore_registry, "Absent", _AlwaysMaybe)
    queried = restore_outcome(tmp_path / f"{label}-query.db", data)
    return filtered, queried


def test_duplicated_receipts_and_names_fail_alike(tmp_path, monkeypatch):
    lines = _snapshot().splitlines(keepends=True)
    receipts = [i for i, line in enumerate(lines) if line.startswith('{"receipt"')]
    from tests.support.mutations import reseal
    twice = lines[: receipts[3] + 1] + [lines[receipts[1]]] + lines[receipts[3] + 1:]
    data = reseal([line.rstrip("\n") for line in twice]).encode()
    filtered, queried = _both(tmp_path, monkeypatch, data, "twice")
    assert filtered == queried
    assert filtered[0][:3] == ("error", "Conflict", receipts[3] + 2), filtered[0]


def test_mutated_snapshots_fail_alike(tmp_path, monkeypatch):
    text = _snapshot()
    rng = random.Random(41)
    seen = set()
    for n in range(60):
        data = text.encode() if n == 0 else mutate(text, rng, sealed=rng.random() < 0.7)
        filtered, queried = _both(tmp_path, monkeypatch, data, f"m{n}")
        assert filtered == queried, (n, filtered[0], queried[0])
        seen.add(filtered[0][1] if filtered[0][0] == "error" else "ok")
    assert "ok" in seen and len(seen) >= 3, seen
