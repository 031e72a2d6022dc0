"""Proves doctor (spec 06 §3): every class of damage in the catalogue is reported (and the repairable
ones repaired), clean stores stay clean (including decision 3's unified names), it is read-only on
read-only files and mounts, and the CLI exits 1 whenever the report is not ok."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

import fgraph
from fgraph.cli import main as cli
from fgraph.ops import doctor
from fgraph.core.errors import FormatError, ReadOnly
from tests.support.cli import run_cli
from tests.support.damage import DAMAGE, copy_of, damage
from tests.support.peerlib import peer_executable

REPORT_KEYS = set(doctor.REPORT_KEYS)
FILE_DAMAGE = ("truncated file", "torn pages", "zeroed page")


def damage_file(path: str, kind: str) -> None:
    size = os.path.getsize(path)
    with open(path, "r+b") as handle:
        if kind == "truncated file":
            handle.truncate(size // 2)
        elif kind == "torn pages":
            for page in (3, 5, 8):
                handle.seek(page * 4096 + 100)
                handle.write(os.urandom(2048))
        else:
            handle.seek(4 * 4096)
            handle.write(bytes(4096))


def diagnose(path: str):
    """The report, or the FormatError that stopped the open (damage that never reaches doctor)."""
    try:
        with fgraph.connect(path, read_only=True) as db:
            return db.doctor()
    except FormatError as exc:
        return exc


def test_template_is_clean(template):
    report = diagnose(template)
    assert report["ok"], report["problems"]
    assert set(report) == REPORT_KEYS and report["unverifiable_event_hashes"] >= 1


def test_damage_catalogue(template, tmp_path):
    detected, missed = [], []
    for name, (statements, repairable) in DAMAGE.items():
        path = copy_of(template, tmp_path, f"{len(detected) + len(missed)}.db")
        damage(path, statements)
        report = diagnose(path)
        found = isinstance(report, FormatError) or not report["ok"]
        (detected if found else missed).append(name)
        if found and not isinstance(report, FormatError):
            assert report["repair_needed"] == repairable or not repairable, (name, report)
            with fgraph.connect(path, read_only=True) as db:
                records = db.diagnose().problems
            assert [p.message for p in records] == report["problems"]
            assert all(p.repairable for p in records) == repairable, (name, records)
    for kind in FILE_DAMAGE:
        path = copy_of(template, tmp_path, kind.replace(" ", "-") + ".db")
        damage_file(path, kind)
        report = diagnose(path)
        (detected if isinstance(report, FormatError) or not report["ok"] else missed).append(kind)
    total = len(DAMAGE) + len(FILE_DAMAGE)
    print(f"\ndamage classes: {total}, detected: {len(detected)}")
    assert not missed, missed
    assert len(detected) == total >= 50


@pytest.mark.parametrize("name", [n for n, (_, repairable) in DAMAGE.items() if repairable])
def test_repairable_damage_is_repaired(template, tmp_path, name):
    path = copy_of(template, tmp_path)
    damage(path, DAMAGE[name][0])
    with fgraph.connect(path) as db:
        before = db.doctor()
        after = db.doctor(repair=True)
        again = db.doctor()
    assert before["repair_needed"] and not before["ok"]
    assert after["ok"] and after["repaired"] and after["problems"] == []
    assert after["fts_rows_rebuilt"] == after["expected_fts_rows"] == after["fts_rows"]
    assert after["orphaned_blobs_removed"] == before["orphaned_blobs"]
    assert again["ok"] and not again["repaired"] and again["fts_rows_rebuilt"] == 0


def test_repair_refuses_fatal_damage_and_changes_nothing(template, tmp_path):
    path = copy_of(template, tmp_path)
    damage(path, DAMAGE["orphaned blob"][0] + DAMAGE["next_id too high"][0])
    with fgraph.connect(path) as db:
        with pytest.raises(FormatError, match="non-rebuildable"):
            db.doctor(repair=True)
        assert db.doctor()["orphaned_blobs"] == 1


def test_repair_needs_a_writable_handle(template, tmp_path):
    with fgraph.connect(copy_of(template, tmp_path), read_only=True) as db:
        with pytest.raises(ReadOnly):
            db.doctor(repair=True)


def test_check_runs_inside_an_open_write_transaction(template, tmp_path):
    with fgraph.connect(copy_of(template, tmp_path)) as db:
        db.connection.execute("BEGIN IMMEDIATE")
        db.connection.execute("INSERT INTO fgraph_blobs VALUES (zeroblob(32), 'x')")
        assert doctor.check(db.connection)["orphaned_blobs"] == 1
        assert not db.connection.getautocommit()
        db.connection.execute("ROLLBACK")
        assert db.doctor()["ok"]


def test_unified_names_stay_clean(tmp_path):
    """Decision 3: an applied event naming identities the receiver already has keeps doctor clean."""
    source = fgraph.connect(str(tmp_path / "a.db"))
    source.transact([{"id": "ada", "k/v": 1}, {"id": {"tmp": "t"}, "k/w": 2}])
    receiver = fgraph.connect(str(tmp_path / "b.db"))
    receiver.transact({"id": "ada", "k/v": 5})
    receiver.apply("".join(line + "\n" for line in source.iter_events()))
    assert receiver.doctor()["ok"] and source.doctor()["ok"]
    source.close()
    receiver.close()


def test_cli_exit_codes_and_outputs(template, tmp_path):
    good = copy_of(template, tmp_path, "good.db")
    code, out, _ = run_cli("--db", good, "doctor", "--json")
    assert code == 0 and set(json.loads(out)) == REPORT_KEYS and json.loads(out)["ok"]
    bad = copy_of(template, tmp_path, "bad.db")
    damage(bad, DAMAGE["FTS row removed"][0] + DAMAGE["next_id too high"][0])
    code, out, err = run_cli("--db", bad, "doctor", "--json")
    assert code == 1 and err == "" and not json.loads(out)["ok"]
    code, out, _ = run_cli("--db", bad, "doctor")
    lines = out.splitlines()
    assert code == 1 and lines[0].startswith("NOT OK: 2 problem")
    assert any("full-text" in ln and "--repair" in ln for ln in lines)
    assert any("next_id" in ln and "restore" in ln for ln in lines)
    code, _, err = run_cli("--db", bad, "doctor", "--repair")
    assert code == 1 and err.startswith("FormatError: ") and "Traceback" not in err
    code, _, err = run_cli("--db", tmp_path / "missing.db", "doctor")
    assert code == 1 and err.startswith("NotFound: ") and not (tmp_path / "missing.db").exists()


def test_cli_expect_digest(template, tmp_path):
    path = copy_of(template, tmp_path)
    code, out, _ = run_cli("--db", path, "info", "--digest", "--json")
    info = json.loads(out)
    assert code == 0 and len(info["digest"]) == 64 and info["basis_tx"] > 64
    with fgraph.connect(path, read_only=True) as db:
        assert db.snapshot().splitlines()[-1].endswith(f'"sha256":"{info["digest"]}"}}')
    assert run_cli("--db", path, "doctor", "--expect-digest", info["digest"])[0] == 0
    assert run_cli("--db", path, "doctor", "--expect-digest", "sha256:" + info["digest"].upper())[0] == 0
    code, out, _ = run_cli("--db", path, "doctor", "--json", "--expect-digest", "0" * 64)
    assert code == 1 and "logical digest differs" in json.loads(out)["problems"][0]
    code, _, err = run_cli("--db", path, "doctor", "--expect-digest", "nope")
    assert code == 1 and err.startswith("TypeError: ")


def test_read_only_file_and_mount(template, tmp_path):
    path = copy_of(template, tmp_path)
    os.chmod(path, 0o444)
    assert diagnose(path)["ok"]
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        shutil.copy(template, mount / "store.db")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        before = sorted(os.listdir(mount))
        code, out, err = run_cli("--db", mount / "store.db", "doctor", "--json")
        assert (code, err) == (0, "") and json.loads(out)["ok"]
        assert sorted(os.listdir(mount)) == before
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.peer
@pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set")
def test_peer_agrees_on_clean_and_damaged_files(template, tmp_path):
    peer = peer_executable()
    clean = subprocess.run([peer, "--db", template, "doctor", "--json"], capture_output=True, text=True)
    assert json.loads(clean.stdout)["ok"], clean.stdout
    for name in ("FTS row removed", "orphaned blob", "next_id too high", "anonymous eid changed", "event_hash changed"):
        path = copy_of(template, tmp_path, "p.db")
        damage(path, DAMAGE[name][0])
        theirs = json.loads(subprocess.run([peer, "--db", path, "doctor", "--json"], capture_output=True,
                                           text=True).stdout)
        ours = diagnose(path)
        assert theirs["ok"] is ours["ok"] is False and theirs["repair_needed"] == ours["repair_needed"], name


def test_backup_and_doctor_are_commands():
    assert "doctor" in cli.cli.commands and "backup" in cli.cli.commands and "restore-backup" in cli.cli.commands


def test_the_integrity_thread_hands_over_what_it_caught():
    """Issue 11 item 6: nothing is swallowed. SQLite errors mean "check on your own handle";
    anything else is a bug and reaches the caller."""
    import apsw

    from fgraph.ops.doctor.physical import IntegrityThread as _IntegrityThread

    def cannot_open():
        raise apsw.CantOpenError("no second handle")

    def buggy():
        raise RuntimeError("a bug")

    fallback = _IntegrityThread(cannot_open)
    fallback.start()
    assert fallback.result() is None and isinstance(fallback.error, apsw.CantOpenError)
    bug = _IntegrityThread(buggy)
    bug.start()
    with pytest.raises(RuntimeError, match="a bug"):
        bug.result()
