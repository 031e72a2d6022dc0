"""Proves backup and restore_backup (spec 06 §1–§2): a verified, private, consistent copy whose digest
equals the source's at its basis, published without ever touching an existing name, completed under
a concurrent writer, and leaving nothing behind on failure (bad destinations, a full disk, SIGKILL);
with FGRAPH_PEER, the published doctor accepts our backups and stores, and ours accepts the peer's."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import fgraph
from fgraph.core.errors import Conflict, FormatError, NotFound
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.paths import REPO
from tests.support.peerlib import peer_executable
from tests.support.corerows import core_rows
from tests.support.cli import run_cli

FGRAPH = os.path.join(os.path.dirname(sys.executable), "fgraph")


def make_store(path, events: int = 5, big: int = 0) -> str:
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        for i in range(events):
            db.transact({"id": f"e{i}", "k/text": f"value {i}", "k/n": i, "k/long": "x" * (300 + i)})
        for i in range(big):
            db.transact({"id": f"big{i}", "k/blob": f"{i}" + "y" * 1_000_000})
    return str(path)


def listing(directory) -> list:
    return sorted(os.listdir(directory))


def test_backup_is_verified_private_and_proves_its_content(tmp_path):
    src = make_store(tmp_path / "src.db")
    (tmp_path / "out").mkdir()
    code, out, err = run_cli("--db", src, "--json", "backup", tmp_path / "out" / "copy.db")
    result = json.loads(out)
    assert (code, err) == (0, "") and set(result) == {"basis_tx", "digest", "path"}
    assert result["path"] == str(tmp_path / "out" / "copy.db")
    assert listing(tmp_path / "out") == ["copy.db"]
    stat = os.stat(result["path"])
    assert stat.st_mode & 0o777 == 0o600 and stat.st_nlink == 1
    assert core_rows(result["path"]) == core_rows(src)
    with open(result["path"], "rb") as handle:
        assert handle.read(20)[18:20] == b"\x02\x02"  # the copy keeps WAL mode in its header
    with fgraph.connect(src, read_only=True) as db:
        assert db.logical_digest() == result["digest"] and db.latest_tx() == result["basis_tx"]
    assert run_cli("--db", result["path"], "doctor", "--expect-digest", result["digest"])[0] == 0


def test_umask_can_only_narrow_the_mode(tmp_path):
    src = make_store(tmp_path / "src.db", events=1)
    old = os.umask(0o077)
    try:
        with fgraph.connect(src, read_only=True) as db:
            db.backup(tmp_path / "a.db")
        os.umask(0o277)
        with fgraph.connect(src, read_only=True) as db:
            db.backup(tmp_path / "b.db")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "a.db").st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "b.db").st_mode & 0o777 == 0o400


def test_existing_destinations_are_refused_and_untouched(tmp_path):
    src = make_store(tmp_path / "src.db", events=1)
    (tmp_path / "taken.db").write_bytes(b"precious")
    os.symlink(tmp_path / "nowhere.db", tmp_path / "dangling.db")
    os.symlink(tmp_path / "taken.db", tmp_path / "link.db")
    os.link(src, tmp_path / "hard.db")
    with fgraph.connect(src, read_only=True) as db:
        before = listing(tmp_path)  # after the open: a read-only open may create the source's own sidecars
        for dest in ("taken.db", "dangling.db", "link.db", "src.db", "hard.db"):
            with pytest.raises(Conflict):
                db.backup(tmp_path / dest)
        with pytest.raises(Conflict, match="open database"):
            db.backup(src)
    assert listing(tmp_path) == before and (tmp_path / "taken.db").read_bytes() == b"precious"
    assert not os.path.lexists(tmp_path / "nowhere.db")
    code, _, err = run_cli("--db", src, "backup", tmp_path / "taken.db")
    assert code == 1 and err.startswith("Conflict: ")


def test_bad_destinations_and_sources(tmp_path):
    src = make_store(tmp_path / "src.db", events=1)
    code, _, err = run_cli("--db", src, "backup", tmp_path / "missing" / "x.db")
    assert code == 1 and err.startswith("FormatError: ") and "cannot be created" in err
    (tmp_path / "notes.txt").write_text("not a database\n" * 100)
    code, _, err = run_cli("--db", tmp_path / "notes.txt", "backup", tmp_path / "x.db")
    assert code == 1 and err.startswith("FormatError: ")
    code, _, err = run_cli("--db", tmp_path / "absent.db", "backup", tmp_path / "x.db")
    assert code == 1 and err.startswith("NotFound: ") and not (tmp_path / "absent.db").exists()
    assert not [n for n in listing(tmp_path) if n.startswith(("x.db", "."))]


@pytest.fixture
def tiny_mount(tmp_path):
    mount = tmp_path / "mnt"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_full_disk_leaves_nothing(tmp_path, tiny_mount):
    src = make_store(tmp_path / "src.db", big=2)
    rows = core_rows(src)
    with fgraph.connect(src, read_only=True) as db:
        with pytest.raises(FormatError):
            db.backup(tiny_mount / "copy.db")
    assert listing(tiny_mount) == [] and core_rows(src) == rows


def test_read_only_directory_is_refused(tmp_path, tiny_mount):
    src = make_store(tmp_path / "src.db", events=1)
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_mount)], check=True)
    code, _, err = run_cli("--db", src, "backup", tiny_mount / "copy.db")
    assert code == 1 and err.startswith("FormatError: ") and listing(tiny_mount) == []


def test_sigkill_halfway_leaves_no_destination_and_no_strays(tmp_path):
    src = make_store(tmp_path / "src.db", big=40)
    rows = core_rows(src)
    out = tmp_path / "out"
    out.mkdir()
    for attempt in range(3):
        proc = subprocess.Popen([FGRAPH, "--db", src, "backup", out / "copy.db"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not any(name.endswith(".tmp") for name in os.listdir(out)) and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(0.05 * attempt)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while listing(out) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert listing(out) == [], listing(out)
    assert core_rows(src) == rows


WRITER = """
import sys, time, fgraph
db = fgraph.connect(sys.argv[1])
i, start = 0, time.monotonic()
while time.monotonic() - start < float(sys.argv[2]):
    db.transact({"id": f"w{i % 50}", "w/n": i, "w/text": "t" * (i % 400)})
    i += 1
print(i)
"""


def test_backup_completes_under_a_concurrent_writer(tmp_path):
    src = make_store(tmp_path / "src.db", events=200)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, src, "6"], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        results = []
        with fgraph.connect(src, read_only=True) as db:
            for k in range(3):
                results.append(db.backup(tmp_path / f"copy{k}.db", details=True))
    finally:
        commits = int(writer.communicate(timeout=60)[0])
    assert commits > 10 and writer.returncode == 0
    with fgraph.connect(src, read_only=True) as db:
        for result in results:
            assert db.at(result["basis_tx"]).logical_digest() == result["digest"]
            with fgraph.connect(result["path"], read_only=True) as copy:
                assert copy.latest_tx() == result["basis_tx"] and copy.doctor()["ok"]
    assert len({r["basis_tx"] for r in results}) > 1


def test_restore_backup(tmp_path):
    src = make_store(tmp_path / "src.db")
    with fgraph.connect(src, read_only=True) as db:
        proof = db.backup(tmp_path / "b.db", details=True)
    with fgraph.restore_backup(tmp_path / "b.db", tmp_path / "new.db") as db:
        assert db.logical_digest() == proof["digest"] and db.doctor()["ok"]
        db.transact({"id": "later", "k/n": 1})
    (tmp_path / "empty.db").write_bytes(b"")
    with fgraph.restore_backup(tmp_path / "b.db", tmp_path / "empty.db") as db:
        assert db.latest_tx() == proof["basis_tx"]
    with pytest.raises(Conflict, match="not empty"):
        fgraph.restore_backup(tmp_path / "b.db", tmp_path / "new.db")
    with pytest.raises(NotFound):
        fgraph.restore_backup(tmp_path / "nothing.db", tmp_path / "x.db")
    with pytest.raises(FormatError):
        fgraph.restore_backup(tmp_path / "b.db", tmp_path / "missing" / "x.db")
    code, out, err = run_cli("--json", "restore-backup", tmp_path / "b.db", tmp_path / "cli.db")
    assert (code, err) == (0, "") and json.loads(out) == dict(proof, path=str(tmp_path / "cli.db"))
    strays = [n for n in os.listdir(tmp_path) if n.startswith(".")]
    assert strays == [] and not os.path.exists(tmp_path / "x.db")


def test_restore_backup_refuses_a_damaged_backup(tmp_path):
    src = make_store(tmp_path / "src.db")
    with fgraph.connect(src, read_only=True) as db:
        db.backup(tmp_path / "b.db")
    os.chmod(tmp_path / "b.db", 0o600)
    import apsw
    conn = apsw.Connection(str(tmp_path / "b.db"))
    conn.execute("UPDATE fgraph_meta SET value = value + 1 WHERE key = 'next_id'")
    conn.close()
    with pytest.raises(FormatError, match="verification"):
        fgraph.restore_backup(tmp_path / "b.db", tmp_path / "new.db")
    assert not os.path.exists(tmp_path / "new.db") and not [n for n in os.listdir(tmp_path) if n.startswith(".")]


# ----------------------------------------------------------------- interop (random scenarios)

def random_history(seed: int) -> list:
    rng = random.Random(seed)
    names, history = ["ada", "bob", "cy"], [{"id": "p/email", "fgraph/type": "text", "fgraph/unique": True}]
    for i in range(rng.randrange(3, 9)):
        who = rng.choice(names)
        roll = rng.random()
        if roll < 0.5:
            history.append({"id": who, "p/name": rng.choice(["A", "B", "x" * 300]), "p/n": rng.randrange(5),
                            "p/friend": {"ref": rng.choice(names)}})
        elif roll < 0.7:
            history.append([{"id": {"tmp": "t"}, "p/score": rng.random()}, {"id": who, "p/l": {"ref": {"tmp": "t"}}}])
        elif roll < 0.85:
            history.append({"id": who, "p/email": f"{who}@{i}", "p/v": {"vector": [rng.random(), 1.0]}})
        else:
            history.append(["retract", who, "p/name"])
    return history


PEER_BUILDER = """
import json, sys, fgraph
db = fgraph.connect(sys.argv[1])
for item in json.loads(sys.argv[2]):
    try:
        db.transact(item)
    except fgraph.FGraphError:
        pass
db.close()
"""


@pytest.mark.peer
@pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set")
def test_peer_doctor_accepts_our_stores_and_backups_and_ours_accepts_theirs(tmp_path):
    peer = peer_executable()
    peer_python = subprocess.run([peer, "--python"], capture_output=True, text=True, check=True).stdout.strip()
    for seed in range(6):
        history = random_history(seed)
        ours = str(tmp_path / f"ours{seed}.db")
        with fgraph.connect(ours) as db:
            for item in history:
                try:
                    db.transact(item)
                except fgraph.FgraphError:
                    pass
            db.backup(tmp_path / f"backup{seed}.db")
        for path in (ours, str(tmp_path / f"backup{seed}.db")):
            report = json.loads(subprocess.run([peer, "--db", path, "doctor", "--json"], capture_output=True,
                                               text=True).stdout)
            assert report["ok"], (seed, path, report["problems"])
        theirs = str(tmp_path / f"theirs{seed}.db")
        subprocess.run([peer_python, "-c", PEER_BUILDER, theirs, json.dumps(history)], cwd=tmp_path, check=True)
        with fgraph.connect(theirs, read_only=True) as db:
            assert db.doctor()["ok"], (seed, db.doctor()["problems"])
            db.backup(tmp_path / f"their-backup{seed}.db")
