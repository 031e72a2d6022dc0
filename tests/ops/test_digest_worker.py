"""Proves the backup's digest worker: its digest is ``logical_digest`` of the copy, a backup whose
worker fails (cannot start, dies, prints garbage) still proves itself with the right digest, and
a failed verification leaves no worker running. Its one pass (the digest and doctor's asserting
walk on the same fact lines) gives the report plain doctor gives on clean and damaged copies,
a broken answer changes nothing, and a copy failing any check is never published."""

from __future__ import annotations

import json
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


# -- the one pass: doctor's asserting walk answered by the worker, on clean and damaged copies --
from fgraph.core import connection  # noqa: E402
from fgraph.core.txn import read_transaction  # noqa: E402
from fgraph.ops import doctor  # noqa: E402
from tests.support.peerlib import peer_executable  # noqa: E402
from tests.support.damage import ASSERTING_DAMAGE, DAMAGE, DECIDED, copy_of, damage, retract_side_damage  # noqa: E402

WRONG_DIGEST = "0" * 64
VERIFIED = ["clean", "retracting side", "wrong digest", "fact value rewritten", "fact moved to another entity",
            "event_data tampered", "missing blob", "altered blob", "orphaned blob", "rx not a transaction",
            "dangling attribute", "dangling ref", "NULL payload without excision", "shape required attribute gone",
            "next_id too high", "excision marker removed", *ASSERTING_DAMAGE]


def damaged_copy(template: str, tmp_path, case: str) -> str:
    path = copy_of(template, tmp_path)
    if case == "retracting side":
        retract_side_damage(path)
    elif case in DAMAGE:
        damage(path, DAMAGE[case][0])
    elif case in ASSERTING_DAMAGE:
        damage(path, ASSERTING_DAMAGE[case])
    return path


def verified(path: str, worker: DigestWorker | None, expect_digest=None):
    """Doctor on the copy as backup runs it (``worker``), or on its own, in one process (None)."""
    conn = connection.open_immutable_copy(path)
    try:
        with read_transaction(conn):
            return doctor.diagnose(conn, expect_digest=expect_digest, parallel=worker)
    finally:
        conn.close()
        if worker is not None:
            worker.stop()


@pytest.mark.parametrize("case", VERIFIED)
def test_the_one_pass_gives_the_plain_report(template, tmp_path, case):
    path = damaged_copy(template, tmp_path, case)
    expect = WRONG_DIGEST if case == "wrong digest" else None
    plain = verified(path, None, expect)
    worker = DigestWorker.start(path)
    fused = verified(path, worker, expect)
    assert fused.report == plain.report and fused.problems == plain.problems  # details too (first fact)
    if case in DECIDED or case in ("retracting side", "wrong digest"):
        assert worker.proof is not None and not worker.failed  # the worker answered: no fallback
    if case == "attribute loses its name":
        assert worker.failed  # the pass gave up: the walk ran here
    if case in ASSERTING_DAMAGE and case in DECIDED and case != "asserting payload redacted":
        assert any(p.kind == "agreement" and p.detail["side"] == "asserted" for p in fused.problems), case


def test_the_one_pass_gives_the_digest_of_snapshot_and_info(template, tmp_path):
    worker = DigestWorker.start(template)
    assert worker.asserted() == (0, None)
    found = worker.result()
    with fgraph.connect(template, read_only=True) as db:
        footer = list(db.iter_snapshot())[-1]
        info = db.info(True)
    assert footer.endswith('"sha256":"%s"}' % found["digest"])
    assert (info["basis_tx"], info["digest"]) == (found["basis_tx"], found["digest"])


@pytest.mark.parametrize("case", ["fact value rewritten", "provenance rewritten", "transaction fact rewritten",
                                  "missing blob", "altered blob", "event_data tampered", "attribute loses its name"])
def test_a_copy_failing_a_check_is_never_published(template, tmp_path, case):
    source = damaged_copy(template, tmp_path, case)
    out = tmp_path / "out"
    out.mkdir()
    with fgraph.connect(source, read_only=True) as db, pytest.raises(FormatError, match="failed verification"):
        db.backup(str(out / "b.db"))
    assert list(out.iterdir()) == []  # neither the backup nor the scratch copy or its sidecars


@pytest.mark.parametrize("second_line", [
    "", "garbage", '{"asserted": "x", "basis_tx": 1, "digest": "%s"}' % ("0" * 64),
    '{"asserted": [0, null], "basis_tx": 1, "digest": "00"}', '{"asserted": [-1, null], "basis_tx": 1, "digest": "%s"}'
    % ("0" * 64), '{"asserted": [0, [1]], "basis_tx": 1, "digest": "%s"}' % ("0" * 64)])
def test_a_broken_second_answer_changes_nothing(template, tmp_path, monkeypatch, second_line):
    """The integrity line is sound, the pass's answer is not: the walk and the digest run here."""
    path = damaged_copy(template, tmp_path, "fact value rewritten")
    plain = verified(path, None)
    monkeypatch.setattr("fgraph.ops.digest_worker.CHILD", "print('{\"integrity\": [[\"ok\"]]}'); print(%r)"
                        % second_line)
    worker = DigestWorker.start(path)
    fused = verified(path, worker)
    assert worker.failed and fused.report == plain.report and fused.problems == plain.problems
    assert [p.detail["side"] for p in fused.problems if p.kind == "agreement"] == ["asserted"]


@pytest.mark.peer
@pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set")
def test_the_one_pass_digest_is_the_peers_snapshot_digest(template, tmp_path):
    """Cross-runtime: a store with every kind of row (blobs, vectors, refs, anonymous ids, an
    excision, provenance); the published runtime's snapshot of our backup ends with our digest."""
    from tests.support.peerlib import peer

    dest = tmp_path / "b.db"
    with fgraph.connect(template, read_only=True) as db:
        proof = db.backup(str(dest), details=True)
        assert proof["digest"] == db.logical_digest()
    footer = json.loads(peer(dest, "snapshot").decode().splitlines()[-1])
    assert footer["sha256"] == proof["digest"]


def test_the_private_copy_is_read_through_a_bounded_map(template):
    from fgraph.ops.digest_worker import COPY_MAP_BYTES, map_private_copy

    conn = connection.open_immutable_copy(template)
    try:
        map_private_copy(conn)
        assert conn.execute("PRAGMA mmap_size").fetchone()[0] == COPY_MAP_BYTES <= 256 * 1024 * 1024
        with read_transaction(conn):
            assert doctor.diagnose(conn).report == verified(template, None).report  # the same through the map
    finally:
        conn.close()
