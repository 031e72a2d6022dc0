"""The excision record, the remainder of a redacted event, carrying an excision out once, and the
owed-excisions note that doctor reports (issue 33, fgraph/ops/propagate.py, docs/forgetting.md)."""

from __future__ import annotations

import copy
import json
import re
import os

import pytest

import fgraph
from fgraph.ops import propagate
from tests.support import canaries


@pytest.fixture
def source(tmp_path):
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 3)
        report = db.excise("ada", operation_id="forget-ada")
        yield db, report


def test_the_record_names_the_target_the_redactions_their_order_and_what_is_left(source):
    db, report = source
    record = db.excision_record(report["event"])
    assert record["fgraph"] == "excision/1" and record["target"] == "ada"
    assert record["origin"] == record["event"] == report["event"]
    assert record["redacts"] == sorted(record["redacts"]) and set(record["chain"]) == set(record["redacts"])
    assert set(record["partial"]) < set(record["redacts"]) and len(record["partial"]) == 3
    lines = list(db.iter_events())
    events = [json.loads(line)["event"] for line in lines]
    for uuid, prev in record["chain"].items():
        i = events.index(uuid)
        assert prev == (events[i - 1] if i else None)               # the source's order (None: its first)
    assert record["prev"] == events[-2]
    assert propagate.check_record(copy.deepcopy(record)) == record
    assert not any(needle.decode(errors="ignore") in json.dumps(record) for needle in canaries.NEEDLES)


@pytest.mark.parametrize("damage", [
    lambda r: r.pop("chain"), lambda r: r.update(fgraph="event/1"), lambda r: r.update(target=""),
    lambda r: r.update(target={"eid": "not-a-uuid"}), lambda r: r.update(partial=["ffffffff-ffff-4fff-8fff-ffffffffffff"]),
    lambda r: r.update(redacts=[1]), lambda r: r.update(extra=1), lambda r: r.update(origin=None)])
def test_a_damaged_record_is_a_format_error_and_nothing_is_erased(tmp_path, source, damage):
    db, report = source
    record = db.excision_record(report["event"])
    damage(record)
    with fgraph.connect(tmp_path / "r.db") as receiver:
        receiver.transact([{"id": "ada", "note/text": canaries.SHORT}])
        with pytest.raises(fgraph.FormatError):
            receiver.carry_out_excision(record, "a.db")
        assert receiver.entity("ada") == {"note/text": canaries.SHORT}


def test_the_remainder_is_what_survives_and_nothing_of_the_erased(source):
    db, report = source
    record = db.excision_record(report["event"])
    full = [u for u in record["redacts"] if u not in record["partial"]]
    assert full and all(json.loads(db.redacted_remainder(u))["asserted"] == [] for u in full)   # traces only
    assert all(json.loads(db.redacted_remainder(u))["meta"] == {"remainder_of": u} for u in full)
    assert db.redacted_remainder(report["event"]) is None                  # not a redacted event
    remainders = [json.loads(db.redacted_remainder(u)) for u in record["partial"]]
    # random event UUIDs are hex and may spell "ada" (…-ada3-…): look for the name outside them
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "", json.dumps(remainders))
    assert "CANARY" not in text and "ada" not in text
    assert {"carol keeps this", "plain 0 again"} <= {item[2] for r in remainders for item in r["asserted"] if item[3] == "text"}
    assert all(r["event"] == propagate.remainder_event(u) for r, u in zip(remainders, record["partial"]))
    mixed = next(r for r in remainders if any(item[0] == "carol" for item in r["asserted"]))
    assert mixed["by"] == "carol" and mixed["source"] == "chat"    # its provenance and time are kept
    assert propagate.remainder_event(record["partial"][0]) == propagate.remainder_event(record["partial"][0])


def test_carrying_out_is_once_and_says_what_it_did(tmp_path, source):
    db, report = source
    record = db.excision_record(report["event"])
    with fgraph.connect(tmp_path / "none.db") as other:
        assert other.carry_out_excision(record, "a.db")["status"] == "nothing_here"
    with fgraph.connect(tmp_path / "own.db") as other:
        other.transact([{"id": "ada", "note/text": "x"}])
        other.excise("ada", operation_id="mine")
        assert other.carry_out_excision(record, "a.db")["status"] == "already_excised"
    with fgraph.connect(tmp_path / "again.db") as other:      # excised here, then told more of her
        other.transact([{"id": "ada", "note/text": "x"}])
        other.excise("ada", operation_id="mine")
        other.transact([{"id": "ada", "note/text": canaries.SHORT}])
        assert other.carry_out_excision(record, "a.db")["status"] == "applied"
        assert other.entity("ada") == {} and other.diagnose().ok
    assert canaries.canary_hits(tmp_path, "again.db") == {}
    with fgraph.connect(tmp_path / "r.db") as receiver:
        receiver.transact([{"id": "ada", "note/text": canaries.SHORT}, {"id": "bob", "rel/knows": {"ref": "ada"}}])
        first = receiver.carry_out_excision(record, "a.db")
        assert first["status"] == "applied" and first["scrub_complete"]
        assert receiver.carry_out_excision(record, "a.db")["status"] == "already_applied"
        assert receiver.entity("ada") == {} and receiver.entity("bob") == {}
        assert receiver.receipt(first["tx"])["operation_id"] == "fgraph-sync-excise:" + record["origin"]
    assert canaries.canary_hits(tmp_path, "r.db") == {}
    assert not (tmp_path / "r.db.excisions-owed").exists()


def test_doctor_reports_an_excision_noted_but_not_carried_out(tmp_path, source):
    db, report = source
    record = db.excision_record(report["event"])
    path = str(tmp_path / "r.db")
    with fgraph.connect(path) as receiver:
        receiver.transact([{"id": "ada", "note/text": canaries.SHORT}])
    propagate.owe(path, record, "a.db")          # what a receiver killed right after noting it leaves
    with fgraph.connect(path, read_only=True) as receiver:
        diagnosis = receiver.diagnose()
    assert not diagnosis.ok and [p.kind for p in diagnosis.problems] == ["excision_owed"]
    assert "was not carried out" in diagnosis.problems[0].message and "'a.db'" in diagnosis.problems[0].message
    with fgraph.connect(path) as receiver:
        repaired = receiver.diagnose(repair=True)  # not repairable by doctor: the erasing belongs to sync
        assert not repaired.ok and [p.kind for p in repaired.problems] == ["excision_owed"]
        receiver.carry_out_excision(record, "a.db")
        assert receiver.diagnose().ok
    # a note left behind by an excision that was carried out and scrubbed is dropped by a repair
    propagate.owe(path, record, "a.db")
    with fgraph.connect(path) as receiver:
        assert receiver.diagnose().ok and receiver.doctor(repair=True)["ok"]
    assert not os.path.exists(path + ".excisions-owed")


def test_the_note_is_never_written_through_a_link_and_then_nothing_is_erased(tmp_path, source):
    db, report = source
    record = db.excision_record(report["event"])
    path = tmp_path / "r.db"
    with fgraph.connect(path) as receiver:
        receiver.transact([{"id": "ada", "note/text": canaries.SHORT}])
        os.symlink(tmp_path / "elsewhere", str(path) + ".excisions-owed")
        with pytest.raises(fgraph.Conflict):
            receiver.carry_out_excision(record, "a.db")
        assert receiver.entity("ada") == {"note/text": canaries.SHORT}
    assert not (tmp_path / "elsewhere").exists()
    with fgraph.connect(path, read_only=True) as receiver:
        assert [p.kind for p in receiver.diagnose().problems] == ["excision_note"]


def test_only_redacted_lines_are_excision_lines(source):
    db, _ = source
    kinds = [propagate.is_excision_line(line) for line in db.iter_events()]
    assert kinds.count(True) == 5 and kinds[-1]       # four stubs and the excision
    assert not propagate.is_excision_line('{"asserted":[["x","a/b",{"json":{"redacted":true}},"json"]]}')
