"""Recent changes rendered for a prompt (issue 14 item 5): ``Db.context``, ``fgraph context``,
the MCP ``context`` tool and ``fgraph://context`` resource share one renderer."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.query.context import ELLIPSIS


@pytest.fixture
def db():
    with fgraph.connect(":memory:", clock=1767225600000000) as handle:
        handle.transact({"id": "ada", "person/born": 1815, "person/name": "Ada"}, by="importer", source="batch:1")
        handle.transact({"id": "ada", "person/born": 1816}, by="mcp:claude")
        handle.transact({"id": "bob", "person/tags": {"json": ["x", 1]}})
        yield handle


def test_newest_first_with_who_where_when_and_facts(db):
    out = db.context()
    assert out["transactions"] == 3 and out["truncated"] is False and out["basis_tx"] == db.latest_tx()
    lines = out["text"].split("\n")
    assert lines[0].startswith(f"tx {db.latest_tx()} at 2026-01-01T00:00:03")
    assert "  + bob person/tags {\"json\":[\"x\",1]}" in lines
    second = lines.index(next(line for line in lines if line.endswith("by mcp:claude")))
    assert lines[second + 1:second + 3] == ["  + ada person/born 1816", "  - ada person/born 1815"]
    assert lines[-3].endswith("by importer (source batch:1)")


def test_since_and_budget_bound_the_text(db):
    since = db.receipt(db.latest_tx())["basis_tx"]  # the transaction before the latest
    assert db.context(since=since)["transactions"] == 1
    small = db.context(budget=100)
    assert small["truncated"] is True and len(small["text"]) <= 100 and small["text"].endswith(ELLIPSIS)
    for bad in (99, 100_001, True, "5"):
        with pytest.raises(fgraph.TypeError):
            db.context(budget=bad)


def test_the_cli_prints_the_same(tmp_path):
    from click.testing import CliRunner
    from fgraph.face.cli import cli
    path = tmp_path / "c.db"
    with fgraph.connect(str(path), clock=1767225600000000) as handle:
        handle.transact({"id": "ada", "person/born": 1815})
        expected = handle.context(budget=500)
    result = CliRunner().invoke(cli, ["--db", str(path), "--json", "context", "--budget", "500"])
    import json
    assert result.exit_code == 0 and json.loads(result.output) == expected


def test_the_mcp_tool_and_resource_render_the_same(db):
    from fgraph.face.mcp_resources import Resources
    from fgraph.face.mcp_tools import Tools
    tools = Tools(db)
    assert tools.context(budget=300)["data"] == db.context(budget=300)
    assert Resources(db, tools.lock).context(since=None, budget="300") == db.context(budget=300)
