"""Proves excise, nohistory and undo (spec 07): the excision's rows, redactions and event match the
published runtime's shapes; excised bytes are physically gone from the file, its WAL, later backups
and snapshots (canaries, 100 random runs); a reader holding the WAL open leaves a recorded pending scrub."""

from __future__ import annotations

import base64
import glob
import os
import random
import secrets

import apsw
import pytest

import fgraph
from fgraph.ops import scrub
from tests.support.stores import seeded_db
from tests.support.corerows import core_rows_of


def test_excision_matches_published_shapes():
    db = seeded_db()
    try:
        db.transact({"id": "a", "x/y": 1})
        db.transact({"id": "a", "x/y": 2})
        db.transact({"id": "b", "x/r": {"ref": "a"}, "x/t": "mentions a in text"})
        db.transact({"id": "c", "x/j": {"json": {"ref": "a"}}})
        report = db.excise("a", operation_id="ex1", if_basis_tx=75)
        assert [f["id"] for f in report["retracted"]] == [41, 43, 45]
        assert all(f["rx"] == 76 for f in report["retracted"])
        assert [f["a"] for f in report["asserted"]] == ["fgraph/at", "fgraph/excised"]
        receipt = db.receipt(76)
        assert receipt["event_hash"] == "sha256:ce38321b669b54efc062525716ba35e0fea00d51bd2e524ef977300804323fa5"
        assert receipt["request_hash"] == "sha256:3129fdbe4b537bc5bb8a6e5b1250c5770b7298af677dbde0c32a8e737b2694ca"
        records = db.event_records()
        assert [r.get("redacted", False) for r in records] == [True, True, True, False, True]
        assert records[-1]["redacts"] == sorted(r["event"] for r in records[:3])
        assert db.entity("b") == {"x/t": "mentions a in text"}
        assert db.history("a") == []
        again = db.excise("a", operation_id="ex1", if_basis_tx=70)
        assert again["status"] == "already_applied" and again["tx"] == 76
    finally:
        db.close()


@pytest.mark.parametrize("ref, options, error", [
    ("fgraph/at", {}, "Unsupported"),
    (67, {}, "Unsupported"),
    ("nobody", {}, "NotFound"),
    ("a", {"if_basis_tx": 66}, "Conflict"),
    ("a", {"if_basis_tx": 12}, "TypeError"),
    ("a", {"operation_id": "\u0007"}, "TypeError"),
    (True, {}, "TypeError"),
])
def test_excise_bad_input_changes_nothing(ref, options, error):
    db = seeded_db()
    try:
        db.transact({"id": "a", "x/y": 1})
        db.transact({"id": "b", "x/y": 1})
        before = core_rows_of(db.connection)
        with pytest.raises(fgraph.FgraphError) as caught:
            db.excise(ref, **options)
        assert caught.value.name == error
        assert core_rows_of(db.connection) == before
    finally:
        db.close()


def test_reexcise_and_reused_operation_id():
    db = seeded_db()
    try:
        db.transact({"id": "a", "x/y": 1})
        db.transact({"id": "b", "x/y": 1})
        db.excise("a", operation_id="op")
        with pytest.raises(fgraph.Conflict):
            db.excise("a", operation_id="other")
        with pytest.raises(fgraph.Conflict):
            db.excise("b", operation_id="op")
    finally:
        db.close()


def plant(db, canaries: dict, rng: random.Random) -> None:
    for i in range(rng.randrange(1, 6)):
        db.transact({"id": f"noise-{i}", "n/v": secrets.token_hex(rng.randrange(1, 200)),
                     "n/w": "x" * rng.randrange(0, 400)})
    db.transact({"id": "victim", "v/short": canaries["short"], "v/long": canaries["long"],
                 "v/bytes": {"bytes": base64.b64encode(canaries["bytes"].encode()).decode()},
                 "v/json": {"json": {"k": canaries["json"]}}, "v/tags": canaries["tag"]})
    db.transact({"id": "victim", "v/short": canaries["short"] + "-2"})  # history: the old value is kept
    db.transact({"id": "holder", "v/friend": {"ref": "victim"}, "v/note": "x" * rng.randrange(300)})
    for i in range(rng.randrange(0, 4)):
        db.transact({"id": f"noise-{i}", "n/v": secrets.token_hex(rng.randrange(1, 200))})


def hits(data: bytes, canaries: dict) -> list:
    found = []
    for name, value in canaries.items():
        for form in {value, value.lower(), value[1:]}:
            if form.encode() in data:
                found.append(name)
                break
    return found


def make_canaries() -> dict:
    token = secrets.token_hex(8)
    return {"short": "S" + token, "long": "L" + secrets.token_hex(200), "bytes": "B" + secrets.token_hex(8),
            "json": "J" + secrets.token_hex(8), "tag": "T" + secrets.token_hex(8)}


def test_canaries_gone_from_file_wal_backup_and_snapshot(tmp_path):
    total_hits = 0
    for run in range(100):
        rng = random.Random(run)
        path = str(tmp_path / f"r{run}.db")
        db = fgraph.connect(path)
        canaries = make_canaries()
        plant(db, canaries, rng)
        report = db.excise("victim", operation_id="erase", if_basis_tx=db.latest_tx())
        assert report["scrub"]["complete"], report["scrub"]
        db.transact({"id": "after", "n/v": "a later write"})
        snap = db.snapshot()
        copy = str(tmp_path / f"r{run}.copy.db")
        backup_of(db, copy)
        db.close()
        for f in glob.glob(str(tmp_path / f"r{run}*")):
            with open(f, "rb") as handle:
                total_hits += len(hits(handle.read(), canaries))
        total_hits += len(hits(snap.encode(), canaries))
    assert total_hits == 0


def backup_of(db, dest: str) -> None:
    if hasattr(db, "backup"):
        db.backup(dest)
        return
    target = apsw.Connection(dest)  # until Db.backup exists: the same online-backup API
    with target.backup("main", db.connection, "main") as b:
        b.step(-1)
    target.close()


def test_without_scrub_the_scan_does_find_canaries(tmp_path):
    """The control: a plain retraction leaves the bytes on disk, so the scan above is meaningful."""
    path = str(tmp_path / "plain.db")
    db = fgraph.connect(path)
    canaries = make_canaries()
    plant(db, canaries, random.Random(1))
    db.transact(["retract", "victim"])
    db.close()
    with open(path, "rb") as handle:
        assert hits(handle.read(), canaries)


def test_reader_holding_the_wal_leaves_a_pending_scrub(tmp_path):
    path = str(tmp_path / "busy.db")
    db = fgraph.connect(path)
    canaries = make_canaries()
    plant(db, canaries, random.Random(2))
    reader = apsw.Connection(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM fgraph_facts").fetchall()
    report = db.excise("victim", operation_id="erase")
    assert report["scrub"]["complete"] is False
    assert "pending" in report["scrub"]["checkpoint"]
    assert scrub.pending(path) is not None
    reader.execute("COMMIT")
    reader.close()
    done = scrub.scrub(db.connection, path, None)
    assert done["complete"] and scrub.pending(path) is None
    db.close()
    with open(path, "rb") as handle:
        assert hits(handle.read(), canaries) == []


def test_nohistory_deletes_superseded_rows_but_events_keep_values():
    db = seeded_db()
    try:
        db.declare("s/v", nohistory=True)
        db.transact({"id": "e", "s/v": "first"})
        report = db.transact({"id": "e", "s/v": "second"})
        assert report["retracted"][0]["v"] == "first" and report["retracted"][0]["rx"] == report["tx"]
        assert [h["v"] for h in db.history("e", "s/v")] == ["second"]
        assert db.event_records()[-1]["retracted"] == [["e", "s/v", "first", "text"]]
        db.declare("s/v", nohistory=False)
        db.transact({"id": "e", "s/v": "third"})
        assert [h["v"] for h in db.history("e", "s/v")] == ["second", "third"]
    finally:
        db.close()


def test_vectors_default_to_nohistory_and_blobs_are_collected():
    db = seeded_db()
    try:
        db.transact({"id": "e", "emb/v": {"vector": [1.0, 0.0]}})
        db.transact({"id": "e", "emb/v": {"vector": [0.0, 1.0]}})
        assert len(db.history("e", "emb/v")) == 1
        assert db.stats()["blobs"] == 1
        assert db.connection.execute("SELECT count(*) FROM fgraph_blobs").fetchone()[0] == 1
    finally:
        db.close()


def test_undo_compensates_and_later_reassertion_survives():
    db = seeded_db()
    try:
        t1 = db.transact({"id": "u", "u/v": 1})["tx"]
        t2 = db.transact({"id": "u", "u/v": 2})["tx"]
        report = db.undo(t2, operation_id="undo-1")
        assert db.entity("u") == {"u/v": 1}
        assert report["asserted"][-1]["a"] == "fgraph/undoes"
        assert db.event_records()[-1]["tx_facts"][0][0] == "fgraph/undoes"
        assert db.undo(t2, operation_id="undo-1")["status"] == "already_applied"
        with pytest.raises(fgraph.Unsupported):
            db.undo(64)
        with pytest.raises(fgraph.NotFound):
            db.undo(t1 - 1)
        db.transact({"id": "u", "u/v": 5})
        db.undo(t1)
        assert db.entity("u") == {"u/v": 5}
    finally:
        db.close()


def test_cli_excise_requires_both_options_and_reports_the_scrub(tmp_path):
    import json
    import subprocess
    import sys
    exe = os.path.join(os.path.dirname(sys.executable), "fgraph")
    db = str(tmp_path / "c.db")
    subprocess.run([exe, "--db", db, "add", '{"id":"a","x/y":"secret"}'], check=True, capture_output=True)
    missing = subprocess.run([exe, "--db", db, "excise", "a", "--operation-id", "x"], capture_output=True)
    assert missing.returncode == 2
    done = subprocess.run([exe, "--db", db, "--json", "excise", "a", "--operation-id", "x", "--if-basis-tx", "67"],
                          capture_output=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "applied" and report["scrub"]["complete"] is True
    stale = subprocess.run([exe, "--db", db, "excise", "a", "--operation-id", "y", "--if-basis-tx", "67"],
                           capture_output=True)
    assert stale.returncode == 1 and stale.stderr.startswith(b"Conflict: ")


def test_doctor_reports_a_pending_scrub_and_repair_finishes_it(tmp_path):
    path = str(tmp_path / "pending.db")
    db = fgraph.connect(path)
    canaries = make_canaries()
    plant(db, canaries, random.Random(3))
    reader = apsw.Connection(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM fgraph_facts").fetchall()
    assert db.excise("victim", operation_id="erase")["scrub"]["complete"] is False
    report = db.doctor()
    assert report["ok"] is False and report["repair_needed"] is True
    assert any(p.startswith("excision scrub pending") for p in report["problems"])
    reader.execute("COMMIT")
    reader.close()
    repaired = db.doctor(repair=True)
    assert repaired["ok"] is True and scrub.pending(path) is None
    db.close()
    with open(path, "rb") as handle:
        assert hits(handle.read(), canaries) == []


KILL_AFTER_COMMIT = """
import os, sys
import fgraph
from fgraph.ops import scrub
scrub.scrub = lambda *args, **kwargs: os._exit(9)   # die right after the excision's COMMIT
db = fgraph.connect(sys.argv[1])
db.excise("victim", operation_id="erase", if_basis_tx=int(sys.argv[2]))
"""


def file_hits(path: str, canaries: dict) -> list:
    found = []
    for name in glob.glob(path + "*"):
        with open(name, "rb") as handle:
            found += hits(handle.read(), canaries)
    return found


@pytest.mark.parametrize("finish", ["retry", "repair"])
def test_an_excision_killed_after_commit_owes_its_scrub(tmp_path, finish):
    """Issue 11 item 10: the scrub is owed durably before COMMIT. A process that dies right after
    COMMIT leaves the erased bytes on disk, but doctor exits 1 until a retry of the same
    operation (or doctor --repair) finishes the scrub."""
    import json
    import subprocess
    import sys
    path = str(tmp_path / "killed.db")
    db = fgraph.connect(path)
    canaries = make_canaries()
    plant(db, canaries, random.Random(11))
    basis = db.latest_tx()
    db.close()
    died = subprocess.run([sys.executable, "-c", KILL_AFTER_COMMIT, path, str(basis)], capture_output=True)
    assert died.returncode == 9, died.stderr
    assert file_hits(path, canaries), "the control: without its scrub the erased bytes are still on disk"
    assert scrub.pending(path) is not None
    exe = os.path.join(os.path.dirname(sys.executable), "fgraph")
    doctor = subprocess.run([exe, "--db", path, "--json", "doctor"], capture_output=True)
    assert doctor.returncode == 1, doctor.stdout
    assert any(p.startswith("excision scrub pending") for p in json.loads(doctor.stdout)["problems"])
    if finish == "retry":
        again = subprocess.run([exe, "--db", path, "--json", "excise", "victim", "--operation-id", "erase",
                                "--if-basis-tx", str(basis)], capture_output=True)
        assert again.returncode == 0, again.stderr
        report = json.loads(again.stdout)
        assert report["status"] == "already_applied" and report["scrub"]["complete"] is True
    else:
        repaired = subprocess.run([exe, "--db", path, "--json", "doctor", "--repair"], capture_output=True)
        assert repaired.returncode == 0, repaired.stdout
    assert scrub.pending(path) is None
    assert file_hits(path, canaries) == []
    assert subprocess.run([exe, "--db", path, "doctor"], capture_output=True).returncode == 0
