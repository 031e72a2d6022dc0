"""Proves fgraph/ops/doctor/digests.py: `doctor --digests` prints the logical and content digests
beside its report, equal to what `info --digest --content-digest` prints at the same basis; on a
file whose event payload no longer matches its hash it still prints the report, and says why the
digests are unavailable, while `info --content-digest` refuses with a typed error naming the event."""

from __future__ import annotations

import json

import apsw

from tests.support.cli import run_cli


def test_doctor_prints_both_digests_or_why_it_cannot(tmp_path):
    db = tmp_path / "x.db"
    run_cli("add", '{"id":"ada","person/name":"Ada"}', db=db, check=True)
    run_cli("add", '{"id":"bob","person/name":"Bob"}', db=db, check=True)
    info = json.loads(run_cli("info", "--digest", "--content-digest", db=db, json=True, check=True).stdout)
    report = json.loads(run_cli("doctor", "--digests", db=db, json=True, check=True).stdout)
    assert report["ok"] and report["digests"] == {key: info[key] for key in
                                                  ("basis_tx", "content_digest", "content_events", "digest")}

    conn = apsw.Connection(str(db))
    conn.execute("UPDATE fgraph_events SET event_data = replace(event_data, 'Bob', 'Eve') "
                 "WHERE event_data LIKE '%Bob%'")
    conn.close()
    code, out, err = run_cli("doctor", "--digests", db=db, json=True)
    report = json.loads(out)
    assert code == 1 and not report["ok"] and report["problems"], (out, err)
    assert "does not match its hash" in report["digests"]["unavailable"]
    code, out, err = run_cli("doctor", "--digests", db=db)
    assert code == 1 and "NOT OK" in out and "digests unavailable: " in out, out
    code, out, err = run_cli("info", "--content-digest", db=db)
    assert code == 1 and out == "" and err.startswith("FormatError: ") and "does not match its hash" in err, err
