"""Time windows on a store a minute old (issue 30 item 1, decision T1 in docs/query.md): every
window the README and ``--help`` recommend, through the library, the CLI and the MCP tools and
resources, on the real clock. A duration reaching before the first transaction is the beginning:
everything for a lower bound, the empty genesis view for ``at``; never an error."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

import fgraph
from fgraph.mcp.resources import Resources
from fgraph.mcp.tools import Tools
from tests.support.cli import run_cli

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
QUERY = '{"find":["?n"],"where":[["?e","person/name","?n"]]}'


@pytest.fixture
def young(tmp_path):
    """A store not yet a minute old: created and first written 50 s ago, written again now."""
    path = tmp_path / "young.db"
    with fgraph.connect(str(path), clock=lambda: fgraph.connect(":memory:").now() - 50_000_000) as db:
        db.transact({"id": "ada", "person/name": "Ada Lovelace"})
    with fgraph.connect(str(path)) as db:
        db.transact({"id": "grace", "person/name": "Grace Hopper"})
    return path


def test_the_library_windows(young):
    with fgraph.connect(str(young), read_only=True) as db:
        assert db.at("24h").latest_tx() == 64 and db.at("24h").q(json.loads(QUERY)).to_dict()["rows"] == []
        assert db.resolve_time("24h") == 64
        assert "Ada Lovelace" in db.context("24h")["text"] and "Grace Hopper" in db.context("24h")["text"]
        assert db.diff("24h", "0s") == db.diff(64, db.latest_tx())
        assert len(db.event_records(db.resolve_time("1m"))) == 2
        # inside the store's life a window still means the last transaction at or before it
        assert [r["asserted"][0][2] for r in db.event_records(db.resolve_time("30s"))] == ["Grace Hopper"]


@pytest.mark.parametrize("args, check", [
    (["context", "--since", "24h"], lambda out: "Ada Lovelace" in out and "Grace Hopper" in out),
    (["tail", "--since", "1m"], lambda out: out.count("\n") == 2),
    (["diff", "24h", "0s"], lambda out: [f["v"] for f in json.loads(out)["asserted"] if f["a"] == "person/name"]
     == ["Ada Lovelace", "Grace Hopper"]),
    (["get", "ada", "--at", "30s"], lambda out: json.loads(out) == {"person/name": "Ada Lovelace"}),
    (["history", "ada", "--at", "1h"], lambda out: False),  # the genesis view: ada is not there yet
    (["q", "--at", "1h", QUERY], lambda out: json.loads(out)["rows"] == []),
    (["q", "--at", "30s", QUERY], lambda out: json.loads(out)["rows"] == [["Ada Lovelace"]]),
    (["explain", "--at", "1h", QUERY], lambda out: json.loads(out)["basis_tx"] == 64),
    (["datoms", "--at", "24h"], lambda out: json.loads(out)["basis_tx"] == 64),
])
def test_the_cli_windows(young, args, check):
    code, out, err = run_cli(*args, db=young, json=True, timeout=60)
    if args[0] == "history":
        assert code == 1 and err.startswith("NotFound: entity 'ada' was not found")
        return
    assert code == 0 and err == "" and check(out), (args, out, err)


def test_the_mcp_tool_and_resources(young):
    with fgraph.connect(str(young), read_only=True) as db:
        context = Tools(db).context(since="24h")
        assert context["ok"] and "Ada Lovelace" in context["data"]["text"]
        resources = Resources(db, threading.Lock())
        assert len(resources.changes(since="24h")["events"]) == 2
        assert [e["asserted"][0][2] for e in resources.changes(since="30s")["events"]] == ["Grace Hopper"]
        assert resources.entity("ada", at="24h") == {"basis_tx": 64, "items": []}   # the genesis view
        assert [i["v"] for i in resources.entity("ada", at="30s")["items"]] == ["Ada Lovelace"]
        with pytest.raises(fgraph.FgraphError, match="changes since must be"):
            resources.changes(since="abc")   # still refused, as the published server refuses it
