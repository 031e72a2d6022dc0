"""Proves doctor's problems are records (issue 11 item 6): repairability, advice and the
report's ``repair_needed`` come from ``Problem.repairable`` and ``kind``, never from wording;
per-event groups are capped and their overflow counted."""

from __future__ import annotations

import fgraph
from fgraph.ops import doctor
from fgraph.ops.doctor.findings import MAX_LINES, Findings, Problem
from fgraph.ops.doctor.report import ADVICE_DIGEST, ADVICE_REPAIR, ADVICE_RESTORE, Diagnosis

FIGURES = {"expected_fts_rows": 0, "fts_rows": 0, "fts_rows_rebuilt": 0, "integrity": "ok", "orphaned_blobs": 0,
           "orphaned_blobs_removed": 0, "repaired": False, "schema_problems": 0, "shape_violations": 0,
           "unverifiable_event_hashes": 0}


def test_repairability_is_a_field_not_a_wording():
    look_alike = Problem("facts", "orphaned blobs: 3", repairable=False)
    real = Problem("orphaned_blobs", "something worded differently", repairable=True)
    digest = Problem("digest", "any words")
    diagnosis = Diagnosis(FIGURES, (look_alike, real, digest))
    text = diagnosis.describe().splitlines()
    assert text[1] == f"problem: orphaned blobs: 3 -> {ADVICE_RESTORE}"
    assert text[2] == f"problem: something worded differently -> {ADVICE_REPAIR}"
    assert text[3] == f"problem: any words -> {ADVICE_DIGEST}"
    assert diagnosis.fatal == [look_alike, digest]
    report = diagnosis.report
    assert report["repair_needed"] is True and report["ok"] is False
    assert report["problems"] == ["orphaned blobs: 3", "something worded differently", "any words"]
    assert tuple(report) == doctor.REPORT_KEYS


def test_only_repairable_problems_make_repair_needed():
    assert Diagnosis(FIGURES, (Problem("facts", "x"),)).report["repair_needed"] is False
    assert Diagnosis(FIGURES, ()).report == dict(FIGURES, ok=True, problems=[], repair_needed=False)


def test_groups_are_capped_and_their_overflow_counted():
    findings = Findings()
    findings.add("integrity", "later but first", first=True)
    for n in range(MAX_LINES + 5):
        findings.line("events", "invalid payloads", f"event {n}")
    findings.count("registry", "invalid identity ids", 0)
    findings.count("registry", "invalid identity ids", 2)
    findings.close()
    messages = [p.message for p in findings.problems]
    assert len(messages) == 1 + MAX_LINES + 1 + 1
    assert messages[-1] == "invalid payloads: 5 more not listed" and findings.problems[-1].kind == "events"
    assert messages[-2] == "invalid identity ids: 2" and messages[1] == "event 0"
    findings.add("integrity", "SQLite says no", first=True)
    assert findings.problems[0].message == "SQLite says no"


def test_an_owed_scrub_is_a_repairable_record(tmp_path):
    with fgraph.connect(str(tmp_path / "x.db")) as db:
        clean = db.diagnose()
    owed = doctor.owing_scrub(clean, {"tx": 70})
    assert clean.ok and not owed.ok and [p.kind for p in owed.problems] == ["scrub_pending"]
    assert owed.problems[0].repairable and owed.report["repair_needed"]
    assert doctor.owing_scrub(clean, None) is clean
