"""``fgraph excise … --reach TARGET`` (issue 33 item 4, fgraph/bridges/sync/reach.py): the excision is
carried out here and at each named store and log at once, and the report says where and how."""

from __future__ import annotations

import json

import pytest

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


def test_a_refused_reach_still_prints_the_receipt_and_what_is_owed(tmp_path):
    """issue 48 item 2: the local excision committed, so its receipt is printed whatever became of a
    target; the target that refused is listed as failed and owed, and the command exits non-zero
    with a typed error that says how to finish."""
    with fgraph.connect(tmp_path / "hub.db") as db:     # the hub wrote her first: it refuses the excision (T3)
        db.transact([{"id": "ada", "note/text": "the hub's own note"}])
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 2)
    file_sync.sync([tmp_path / "a.db"], tmp_path / "side.db")
    file_sync.sync([tmp_path / "a.db"], tmp_path / "hub.db")
    proc = cli("--json", "--db", "a.db", "excise", "ada", "--operation-id", "forget-ada", "--if-basis-tx",
               basis(tmp_path / "a.db"), "--reach", "hub.db", "--reach", "side.db", cwd=tmp_path, timeout=300,
               check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert err.startswith("Conflict: the excision was carried out in 'a.db'") and "'hub.db'" in err
    assert "fgraph sync --from a.db --to hub.db" in err and "excise it here yourself" in err
    report = json.loads(proc.stdout)
    assert [(r["where"], r["status"]) for r in report["reached"]] == [
        ("a.db", "applied"), ("hub.db", "failed"), ("side.db", "applied")]   # one failure keeps no other target back
    assert report["reached"][1]["error"]["name"] == "Conflict"
    assert [(o["where"], o["run"]) for o in report["owed"]] == [("hub.db", "fgraph sync --from a.db --to hub.db")]
    for name in ("a", "side"):
        assert canaries.canary_hits(tmp_path, f"{name}.db") == {}, name


def test_a_reach_that_meets_no_target_problem_owes_nothing(tmp_path):
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 2)
    report = json.loads(cli("--json", "--db", "a.db", "excise", "ada", "--operation-id", "forget-ada",
                            "--if-basis-tx", basis(tmp_path / "a.db"), "--reach", "hub.db", cwd=tmp_path,
                            timeout=300).stdout)
    assert report["owed"] == [] and [r["status"] for r in report["reached"]] == ["applied", "nothing_here"]


@needs_server
def test_a_log_down_after_the_excision_committed_gets_the_receipt_and_the_command_that_finishes(tmp_path, server,
                                                                                              monkeypatch):
    """issue 48 item 2: the server is up when ``--reach`` checks it, then gone when the excision
    travels: the receipt says the store was excised and the log is owed; the command it names
    carries the excision out once the server is back."""
    from fgraph.bridges.sync import adapters, reach
    from fgraph.core.errors import NotFound
    url = f"{server.url}/EV"
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 2)
    cli("sync", "--from", "a.db", "--to", url, "--create-stream", cwd=tmp_path, timeout=300)
    real = adapters.sync

    def down_then_sync(*args, **kwargs):
        server.stop()
        return real(*args, **kwargs)
    monkeypatch.setattr(reach.adapters, "sync", down_then_sync)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotFound) as raised:
        reach.excise_and_reach("a.db", "ada", operation_id="forget-ada", if_basis_tx=basis(tmp_path / "a.db"),
                               reach=[url])
    error = raised.value
    assert error.message.startswith("the excision was carried out in 'a.db'") and "unreachable" in error.message
    assert f"fgraph sync --from a.db --to {url}" in error.hint
    receipt = error.receipt
    assert receipt["status"] == "applied" and [(r["where"], r["status"]) for r in receipt["reached"]] == [
        ("a.db", "applied"), (url, "failed")]
    assert receipt["owed"][0]["run"] == f"fgraph sync --from a.db --to {url}"
    assert canaries.canary_hits(tmp_path, "a.db") == {}
    monkeypatch.undo()
    server.start()
    finished = json.loads(cli("--json", *receipt["owed"][0]["run"].split()[1:], cwd=tmp_path, timeout=300).stdout)
    assert finished["excisions"] and finished["excisions"][0]["messages_deleted"] >= 3
    cli("sync", "--from", url, "--to", "late.db", cwd=tmp_path, timeout=300)
    server.stop()
    assert canaries.canary_hits(server.root) == {} and canaries.canary_hits(tmp_path, "late.db") == {}
