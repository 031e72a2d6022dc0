"""Receipts that do not repeat the secret (issue 47 item 5, decision F6 in docs/forgetting.md): by
default ``excise`` prints (plain and ``--json``, CLI and the MCP ``excise`` tool) what was erased
without a value — checked for every canary form — and ``--published-receipt`` /
``published_receipt=true`` still gives the published receipt, the peer's bytes (FGRAPH_PEER)."""

from __future__ import annotations

import json
import shutil

import pytest

import fgraph
from tests.support import canaries
from tests.support.cli import clean_env, run_cli
from tests.support.mcp import OURS, call, session_run
from tests.support.peerlib import peer_executable


def _leaks(text: str) -> list:
    data = text.encode("utf-8")
    return [needle for needle in canaries.NEEDLES if needle in data]


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "a.db"
    with fgraph.connect(path) as db:
        canaries.write_history(db, 3)
    return path


def basis(path) -> int:
    return json.loads(run_cli("--json", "info", db=path, env=clean_env(), check=True).stdout)["latest_tx"]


def excise(path, *extra, json_output=True):
    args = (["--json"] if json_output else []) + ["excise", "ada", "--operation-id", "forget-ada",
                                                  "--if-basis-tx", basis(path), *extra]
    return run_cli(*args, db=path, env=clean_env(), check=True).stdout


def test_the_cli_receipt_counts_what_was_erased_and_never_shows_a_value(store, tmp_path):
    copy = tmp_path / "copy.db"
    shutil.copyfile(store, copy)
    published = json.loads(excise(copy, "--published-receipt"))
    assert _leaks(json.dumps(published)), "the control: the published receipt lists the erased values"
    for json_output in (True, False):
        target = tmp_path / f"run-{json_output}.db"
        shutil.copyfile(store, target)
        printed = excise(target, json_output=json_output)
        assert _leaks(printed) == [], printed[:500]
        receipt = json.loads(printed)
        assert "retracted" not in receipt
        erased = receipt["erased"]
        assert erased["facts"] == len(published["retracted"]) > 0
        by_attribute = {}
        for fact in published["retracted"]:
            by_attribute[fact["a"]] = by_attribute.get(fact["a"], 0) + 1
        assert {a["attribute"]: a["facts"] for a in erased["attributes"]} == by_attribute
        with fgraph.connect(target) as db:
            (event,) = [line for line in db.iter_events(receipt["tx"] - 1, receipt["tx"])]
        assert erased["redacted_events"] == json.loads(event)["redacts"] and erased["redacted_events"]
        assert receipt["scrub"]["complete"] is True and receipt["status"] == "applied"
        assert {k: v for k, v in receipt.items() if k not in ("erased", "scrub")} == \
            {k: v for k, v in published.items() if k not in ("retracted", "scrub")}


def test_the_reach_receipt_shows_no_value_either(store, tmp_path):
    hub = tmp_path / "hub.db"
    run_cli("sync", "--from", store, "--to", hub, env=clean_env(), check=True)
    printed = excise(store, "--reach", hub)
    assert _leaks(printed) == []
    receipt = json.loads(printed)
    assert receipt["erased"]["facts"] > 0 and [r["where"] for r in receipt["reached"]] == [str(store), str(hub)]


def test_the_published_receipt_is_the_peers(tmp_path):
    peer = peer_executable()
    if peer is None:
        pytest.skip("FGRAPH_PEER is not set")
    runtimes = (("ours", None), ("peer", peer))
    for name, executable in runtimes:
        kwargs = {} if executable is None else {"executable": executable}
        for data in ('{"id":"ada","note/text":"' + canaries.SHORT + '"}', '{"id":"p1","rel/knows":{"ref":"ada"}}'):
            run_cli("add", data, db=tmp_path / f"{name}.db", env=clean_env(), check=True, **kwargs)
    latest = basis(tmp_path / "ours.db")   # the same history gives the same ids in both runtimes
    outputs = []
    for name, executable in runtimes:
        kwargs = {} if executable is None else {"executable": executable}
        extra = ["--published-receipt"] if executable is None else []
        printed = run_cli("--json", "excise", "ada", "--operation-id", "x", "--if-basis-tx", latest, *extra,
                          db=tmp_path / f"{name}.db", env=clean_env(), check=True, **kwargs).stdout
        report = json.loads(printed)
        report.pop("scrub", None)   # ours adds it (docs/forgetting.md)
        outputs.append(report)
    assert outputs[0] == outputs[1] and canaries.SHORT in json.dumps(outputs[0])


def test_the_mcp_excise_tool_answers_without_a_value_and_only_when_allowed(store, tmp_path):
    latest = basis(store)
    arguments = {"entity": "ada", "operation_id": "forget-ada", "if_basis_tx": latest}
    refused = session_run(OURS, store, call("excise", **arguments), "--write")
    assert refused[0] is True and "Unknown tool" in " ".join(refused[2])     # --write alone: not offered
    copy = tmp_path / "copy.db"
    shutil.copyfile(store, copy)
    is_error, data, texts = session_run(OURS, store, call("excise", **arguments), "--write", "--allow-excise")
    assert is_error is False, texts
    assert _leaks(json.dumps(data)) == [] and _leaks(" ".join(texts)) == []
    assert data["data"]["erased"]["facts"] > 0 and data["data"]["status"] == "applied"
    with fgraph.connect(store, read_only=True) as db:
        with pytest.raises(fgraph.NotFound):
            db.entity("nobody")
        assert db.entity("ada") == {}
    is_error, data, texts = session_run(OURS, copy, call("excise", published_receipt=True, **arguments),
                                        "--write", "--allow-excise")
    assert is_error is False and _leaks(json.dumps(data)), "the control: the published receipt has the values"


def test_the_mcp_excise_tool_erases_the_name_without_repeating_it(store):
    arguments = {"entity": "ada", "operation_id": "forget-ada", "if_basis_tx": basis(store), "erase_name": True}
    is_error, data, texts = session_run(OURS, store, call("excise", **arguments), "--write", "--allow-excise")
    assert is_error is False, texts
    assert '"ada"' not in json.dumps(data) and '"ada"' not in " ".join(texts) and _leaks(" ".join(texts)) == []
    with fgraph.connect(store, read_only=True) as db:
        with pytest.raises(fgraph.NotFound):
            db.entity("ada")


def test_allow_excise_without_write_is_a_usage_error(store):
    proc = run_cli("mcp", "--allow-excise", db=store, env=clean_env(), input="")
    assert proc.returncode == 2 and "--allow-excise needs --write" in proc.stderr
