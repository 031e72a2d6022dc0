"""Proves the backup's digest worker: its digest is ``logical_digest`` of the copy, a backup whose
worker fails (cannot start, dies, prints garbage) still proves itself with the right digest, and
a failed verification leaves no worker running."""

from __future__ import annotations

import subprocess
import sys

import pytest

import fgraph
from fgraph.core.errors import FormatError
from fgraph.ops import backup as backup_module
from fgraph.ops.digest_worker import DigestWorker


@pytest.fixture()
def source(tmp_path):
    path = str(tmp_path / "src.db")
    with fgraph.connect(path) as db:
        db.transact({"id": "ada", "p/name": "Ada", "p/score": 1.5, "p/bio": "x" * 400})
        db.transact({"id": "ada", "p/score": 2.5})
        db.retract("ada", "p/bio")
    return path


def expected_digest(path: str) -> str:
    with fgraph.connect(path, read_only=True) as db:
        return db.logical_digest()


def test_the_worker_computes_logical_digest(source):
    found = DigestWorker.start(source).result()
    with fgraph.connect(source, read_only=True) as db:
        assert found == {"basis_tx": db.latest_tx(), "digest": db.logical_digest()}


@pytest.mark.parametrize("argv", [["false"], [sys.executable, "-c", "print('not json')"],
                                  [sys.executable, "-c", "print('{\"basis_tx\": 1, \"digest\": \"00\"}')"]])
def test_a_failing_worker_falls_back_to_the_digest_in_process(source, tmp_path, monkeypatch, argv):
    monkeypatch.setattr(DigestWorker, "start", classmethod(lambda cls, path: cls(subprocess.Popen(
        argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL))))
    with fgraph.connect(source, read_only=True) as db:
        proof = db.backup(str(tmp_path / "b.db"), details=True)
    assert proof["digest"] == expected_digest(source) == expected_digest(str(tmp_path / "b.db"))


def test_a_worker_that_cannot_start_falls_back(source, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    with fgraph.connect(source, read_only=True) as db:
        proof = db.backup(str(tmp_path / "b.db"), details=True)
    assert proof["digest"] == expected_digest(source)


def test_failed_verification_stops_the_worker(source, tmp_path, monkeypatch):
    started, children = [], []

    def start(cls, path):
        children.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL))
        worker = cls(children[-1])
        started.append(worker)
        return worker

    monkeypatch.setattr(DigestWorker, "start", classmethod(start))
    monkeypatch.setattr(backup_module.doctor, "check", lambda conn, **kw: {"ok": False, "problems": ["planted"]})
    with fgraph.connect(source, read_only=True) as db, pytest.raises(FormatError, match="planted"):
        db.backup(str(tmp_path / "b.db"))
    assert started and started[0].proc is None                      # stopped and reaped
    assert all(proc.poll() is not None for proc in children)


def test_the_workers_integrity_rows_are_the_ones_doctor_reports(source, tmp_path, monkeypatch):
    """The copy's integrity check runs in the worker: a (planted) failure there fails the backup."""
    monkeypatch.setattr("fgraph.ops.digest_worker.CHILD",
                        "print('{\"integrity\": [[\"*** in database main *** planted damage\"]]}')")
    with fgraph.connect(source, read_only=True) as db, pytest.raises(FormatError, match="planted damage"):
        db.backup(str(tmp_path / "b.db"))
    assert not (tmp_path / "b.db").exists()
