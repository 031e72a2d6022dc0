"""``fgraph excise … --reach TARGET`` (issue 33 item 4, fgraph/bridges/sync/reach.py): the excision is
carried out here and at each named store and log at once, and the report says where and how."""

from __future__ import annotations

import json

import fgraph
from fgraph.bridges.sync import files as file_sync
from tests.support import canaries
from tests.support.nats import needs_server
from tests.support.syncing import cli


def basis(path) -> int:
    with fgraph.connect(path, read_only=True) as db:
        return db.latest_tx()


def test_reach_carries_it_to_each_store_and_reports_where(tmp_path):
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 2)
    for name in ("hub", "side"):
        file_sync.sync([tmp_path / "a.db"], tmp_path / f"{name}.db")
    file_sync.sync([tmp_path / "hub.db"], tmp_path / "edge.db")
    report = json.loads(cli("--json", "--db", "a.db", "excise", "ada", "--operation-id", "forget-ada",
                            "--if-basis-tx", basis(tmp_path / "a.db"), "--reach", "hub.db", "--reach", "side.db",
                            cwd=tmp_path, timeout=300).stdout)
    assert [(r["where"], r["status"]) for r in report["reached"]] == [
        ("a.db", "applied"), ("hub.db", "applied"), ("side.db", "applied")]
    assert all(r["scrub_complete"] for r in report["reached"]) and "next `fgraph sync`" in report["further"]
    for name in ("a", "hub", "side"):
        assert canaries.canary_hits(tmp_path, f"{name}.db") == {}, name
    assert canaries.canary_hits(tmp_path, "edge.db")               # one hop further: not reached yet, and not claimed
    cli("sync", "--from", "hub.db", "--to", "edge.db", cwd=tmp_path, timeout=300)
    assert canaries.canary_hits(tmp_path, "edge.db") == {}
    again = json.loads(cli("--json", "--db", "a.db", "excise", "ada", "--operation-id", "forget-ada",
                           "--if-basis-tx", basis(tmp_path / "a.db"), "--reach", "hub.db", cwd=tmp_path,
                           timeout=300).stdout)
    assert [(r["where"], r["status"]) for r in again["reached"]] == [("a.db", "already_applied"),
                                                                    ("hub.db", "already_applied")]


def test_reach_of_the_store_itself_is_a_usage_error_and_nothing_is_reached_twice(tmp_path):
    with fgraph.connect(tmp_path / "a.db") as db:
        db.transact([{"id": "ada", "note/text": canaries.SHORT}])
    proc = cli("--db", "a.db", "excise", "ada", "--operation-id", "x", "--if-basis-tx", basis(tmp_path / "a.db"),
               "--reach", "a.db", cwd=tmp_path, timeout=300, check=False)
    assert proc.returncode != 0 and b"Traceback" not in proc.stderr and b"is the target" in proc.stderr


@needs_server
def test_reach_of_a_log_deletes_its_records_and_publishes_the_excision(tmp_path, server):
    url = f"{server.url}/EV"
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 2)
    cli("sync", "--from", "a.db", "--to", url, "--create-stream", cwd=tmp_path, timeout=300)
    report = json.loads(cli("--json", "--db", "a.db", "excise", "ada", "--operation-id", "forget-ada",
                            "--if-basis-tx", basis(tmp_path / "a.db"), "--reach", url, cwd=tmp_path,
                            timeout=300).stdout)
    log = report["reached"][1]
    assert log["where"] == url and log["status"] == "published" and log["messages_deleted"] >= 3
    cli("sync", "--from", url, "--to", "late.db", cwd=tmp_path, timeout=300)
    server.stop()
    assert canaries.canary_hits(server.root) == {} and canaries.canary_hits(tmp_path, "late.db") == {}
