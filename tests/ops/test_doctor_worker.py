"""Proves doctor's second process (``fgraph.ops.doctor.worker``): on a file large enough to use it,
the report equals the single-process one on clean and damaged stores (agreement problems on
the asserting side, which the worker walks, and on the retracting side included, with the same
first fact), and a worker that fails in any way leaves the report unchanged because its checks
then run in the parent."""

from __future__ import annotations

import shutil

import pytest

import fgraph
from fgraph.ops.doctor import worker as worker_module
from tests.support.damage import DAMAGE, copy_of, damage, retract_side_damage

CASES = ["fact value rewritten", "rx not a transaction", "shape required attribute gone", "event_data tampered",
         "cardinality-one broken", "next_id too high"]


def diagnosis(path: str):
    with fgraph.connect(path, read_only=True) as db:
        return db.diagnose()


def single_process(path: str, monkeypatch):
    with monkeypatch.context() as mp:
        mp.setattr(worker_module, "MIN_BYTES", 1 << 62)
        mp.setattr("fgraph.ops.doctor.checkup.worth_it", lambda path: False)
        return diagnosis(path)


@pytest.mark.parametrize("case", ["clean", "retracting side", *CASES])
def test_the_worker_gives_the_single_process_report(template, tmp_path, monkeypatch, case):
    path = copy_of(template, tmp_path)
    if case == "retracting side":
        retract_side_damage(path)
    elif case != "clean":
        damage(path, DAMAGE[case][0])
    expected = single_process(path, monkeypatch)
    started = []
    real_start = worker_module.CheckWorker.start
    monkeypatch.setattr("fgraph.ops.doctor.checkup.worth_it", lambda p: True)
    monkeypatch.setattr(worker_module.CheckWorker, "start", lambda self: started.append(self) or real_start(self))
    found = diagnosis(path)
    assert started and not started[0].failed
    assert found.report == expected.report and found.problems == expected.problems
    if case == "retracting side":
        assert [p.detail["side"] for p in found.problems if p.kind == "agreement"] == ["retracted"]


@pytest.mark.parametrize(("child", "damaged"), [
    ("import sys; sys.exit(3)", True), ("print('garbage')", True), ("print('{\"asserted\": \"x\"}')", True),
    ("import time; time.sleep(0.2)", True),
    # a sound first answer (the file is clean), then a broken integrity answer
    ("print('{\"asserted\": [0, null]}'); print('{\"integrity\": 5}')", False)])
def test_a_failing_worker_changes_nothing(template, tmp_path, monkeypatch, child, damaged):
    path = copy_of(template, tmp_path)
    if damaged:
        retract_side_damage(path)
        damage(path, DAMAGE["fact value rewritten"][0])  # the asserting side, the worker's half
    expected = single_process(path, monkeypatch)
    assert not damaged or [p.detail["side"] for p in expected.problems if p.kind == "agreement"] == ["asserted"]
    monkeypatch.setattr("fgraph.ops.doctor.checkup.worth_it", lambda p: True)
    monkeypatch.setattr(worker_module, "CHILD", child)
    found = diagnosis(path)
    assert found.report == expected.report and found.problems == expected.problems


def test_a_worker_that_cannot_start_changes_nothing(template, tmp_path, monkeypatch):
    path = copy_of(template, tmp_path)
    expected = single_process(path, monkeypatch)
    monkeypatch.setattr("fgraph.ops.doctor.checkup.worth_it", lambda p: True)
    monkeypatch.setattr("sys.executable", str(tmp_path / "no-python"))
    assert diagnosis(path).report == expected.report


def test_only_large_files_use_the_worker(template, tmp_path):
    assert not worker_module.worth_it(template)
    big = str(tmp_path / "big.db")
    shutil.copy(template, big)
    with open(big, "r+b") as handle:
        handle.truncate(worker_module.MIN_BYTES)
    assert worker_module.worth_it(big)
    assert not worker_module.worth_it(str(tmp_path / "missing.db"))
