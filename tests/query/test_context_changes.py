"""Recent changes rendered for a prompt (issue 16 part 2): ``Db.context``, ``fgraph context``, the
MCP ``context`` tool and ``fgraph://context`` resource share one renderer: newest first, grouped
per transaction with who/where/when, cut between items within the limit and the budget, and an
explicit last line naming what was left out and how to get it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fgraph
from fgraph.core.canonical import dumps
from fgraph.query.context.changes import ELLIPSIS
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.cli import run_cli
from tests.support.context import store_of, vm_steps

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
CLOCK = CONFORMANCE_CLOCK


def fill(handle) -> None:
    handle.transact({"id": "ada", "person/born": 1815, "person/name": "Ada"}, by="importer", source="batch:1")
    handle.transact({"id": "ada", "person/born": 1816}, by="mcp:claude")
    handle.transact({"id": "bob", "person/tags": {"json": ["x", 1]}, "person/friend": {"ref": "ada"}})


@pytest.fixture
def db():
    with fgraph.connect(":memory:", clock=CLOCK) as handle:
        fill(handle)
        yield handle


def test_newest_first_grouped_with_who_where_when(db):
    out = db.context()
    assert (out["items"], out["left_out"], out["truncated"], out["basis_tx"]) == (6, 0, False, db.latest_tx())
    assert out["text"].split("\n") == [
        f"## tx {db.latest_tx()} at 2026-01-01T00:00:03.000000Z",
        '- asserted bob person/friend = {"ref":"ada"}',
        '- asserted bob person/tags = {"json":["x",1]}',
        "## tx 69 at 2026-01-01T00:00:02.000000Z by mcp:claude",
        "- asserted ada person/born = 1816",
        "- retracted ada person/born = 1815",
        "## tx 68 at 2026-01-01T00:00:01.000000Z by importer from batch:1",
        "- asserted ada person/born = 1815",
        "- asserted ada person/name = Ada",
    ]


def test_limit_cuts_between_items_and_says_what_is_left_out(db):
    out = db.context(limit=3)
    lines = out["text"].split("\n")
    assert (out["items"], out["left_out"], out["truncated"]) == (3, 3, True)
    assert lines[-2] == "- asserted ada person/born = 1816"  # the 3rd item, then the footer
    assert lines[-1] == out["more"] == (f"{ELLIPSIS} 3 older changes left out (transactions 68-69); "
                                        "get them with: fgraph tail --since 64")


def test_since_entity_and_times(db):
    assert db.context(since=69)["items"] == 2
    assert db.context(since="2026-01-01T00:00:01.5Z")["items"] == 4  # after tx 68 (at :01)
    only_ada = db.context(entity="ada")
    assert only_ada["items"] == 4 and "bob" not in only_ada["text"]
    with pytest.raises(fgraph.NotFound):
        db.context(entity="nobody")


def test_durations_count_back_from_the_database_clock(tmp_path):
    path = str(tmp_path / "t.db")
    with fgraph.connect(path, clock=CLOCK) as handle:
        fill(handle)  # transactions at :01, :02 and :03
    with fgraph.connect(path, clock=CLOCK + 4_000_000) as handle:  # now is :04
        assert handle.context(since="2s")["since"] == 69 and handle.context(since="3s")["items"] == 4
        assert handle.context(since="1s")["items"] == 0
        # decision T1: a window reaching before the first transaction is the whole history, not an error
        assert handle.context(since="1d")["items"] == handle.context(since=64)["items"] == 6


def test_json_format_groups_the_same_items(db):
    out = db.context(limit=3, format="json")
    assert out["transactions"] == [
        {"tx": 73, "at": "2026-01-01T00:00:03.000000Z", "changes": [
            {"op": "asserted", "e": "bob", "a": "person/friend", "v": {"ref": "ada"}},
            {"op": "asserted", "e": "bob", "a": "person/tags", "v": {"json": ["x", 1]}}]},
        {"tx": 69, "at": "2026-01-01T00:00:02.000000Z", "by": "mcp:claude", "changes": [
            {"op": "asserted", "e": "ada", "a": "person/born", "v": 1816}]}]
    assert out["left_out"] == 3 and out["more"].startswith(f"{ELLIPSIS} 3 older changes")


def test_bad_options_are_type_errors(db):
    for bad in (99, 100_001, True, "5"):
        with pytest.raises(fgraph.TypeError):
            db.context(budget=bad)
    for bad in (0, 10_001, True):
        with pytest.raises(fgraph.TypeError):
            db.context(limit=bad)
    with pytest.raises(fgraph.TypeError, match="markdown or json"):
        db.context(format="html")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(100, 700), limit=st.integers(1, 12), fmt=st.sampled_from(["markdown", "json"]))
def test_output_never_exceeds_the_budget_and_counts_add_up(db, budget, limit, fmt):
    out = db.context(budget=budget, limit=limit, format=fmt)
    size = len(out["text"]) if fmt == "markdown" else len(dumps(out))
    assert size <= budget
    assert out["items"] + out["left_out"] == 6 and out["items"] <= limit
    assert out["truncated"] == (out["left_out"] > 0) == ("more" in out)
    if fmt == "markdown" and out["truncated"]:
        assert out["text"].endswith(out["more"])
    assert db.context(budget=budget, limit=limit, format=fmt) == out  # deterministic for one basis


def test_a_big_history_is_read_newest_first_within_the_limit(tmp_path):
    with fgraph.connect(str(tmp_path / "big.db"), clock=CLOCK) as handle:
        for k in range(300):
            handle.transact({"id": f"n{k}", "n/v": k})
        out = handle.context(limit=5)
        assert out["items"] == 5 and out["left_out"] == 295
        assert out["text"].split("\n")[1] == "- asserted n299 n/v = 299"
        assert out["more"].startswith(f"{ELLIPSIS} 295 older changes left out (transactions 67-")


def test_the_cli_prints_markdown_as_text_and_json_on_request(tmp_path):
    path = tmp_path / "c.db"
    with fgraph.connect(str(path), clock=CLOCK) as handle:
        fill(handle)
        expected = handle.context(budget=500, limit=4)
        expected_json = handle.context(budget=500, limit=4, format="json")

    def cli(*args):
        return run_cli("context", "--by", "change", *args, db=path, env={"FGRAPH_CLOCK": str(CLOCK + 4_000_000), "PATH": ""}, timeout=60)

    assert cli("--budget", "500", "--limit", "4") == (0, expected["text"] + "\n", "")
    code, out, _ = cli("--budget", "500", "--limit", "4", "--json")
    assert code == 0 and json.loads(out) == expected
    code, out, _ = cli("--budget", "500", "--limit", "4", "--format", "json")
    assert code == 0 and json.loads(out) == expected_json
    code, out, _ = cli("--since", "3s", "--entity", "ada")
    assert code == 0 and out.startswith("## tx 69 ") and "bob" not in out
    assert cli("--since", "2d") == cli("--since", "64")  # decision T1: from the beginning
    assert cli("--since", "2025-12-30T00:00:04Z") == cli("--since", "64")  # decision T2: from the beginning
    assert cli("--format", "html")[0] == 2


def test_the_mcp_tool_and_resource_render_the_same(db):
    from fgraph.mcp.resources import Resources
    from fgraph.mcp.tools import Tools
    tools = Tools(db)
    # issue 30 item 4: over MCP the last line names the MCP call that gets the rest, not a shell command
    assert tools.context(budget=300, by="change")["data"] == db.context(budget=300, more_hint="tool")
    assert tools.context(limit=2, entity="ada", by="change")["data"] == db.context(limit=2, entity="ada", more_hint="tool")
    resource = Resources(db, tools.lock).context(since=None, budget="300", by="change")
    assert resource == db.context(budget=300, more_hint="resource")
    assert tools.context(budget=300, by="change")["data"]["more"].endswith("get them with: context(since=64, limit=6, budget=1000)")
    assert tools.context(limit=2, entity="ada", by="change")["data"]["more"].endswith(
        'get them with: context(since=64, limit=4, budget=1000, entity="ada")')
    assert resource["more"].endswith("get them with: fgraph://changes?since=64")
    assert "fgraph tail" not in tools.context(budget=300, by="change")["data"]["text"] + resource["text"]
    assert "fgraph tail --since 64" in db.context(budget=300)["more"]   # the CLI keeps its own words
    # issue 50: neither is the published server's, so both default to the prompt block, as the CLI does
    assert tools.context(budget=300)["data"] == db.context(budget=300, by="entity", more_hint="tool")
    assert Resources(db, tools.lock).context(budget="300") == db.context(budget=300, by="entity", more_hint="resource")


def test_past_the_count_cap_the_footer_says_or_more(monkeypatch):
    monkeypatch.setattr("fgraph.query.context.shape.COUNT_CAP", 50)
    with store_of(300) as handle:
        out = handle.context(limit=5)
        assert (out["items"], out["left_out"], out["truncated"], out["left_out_at_least"]) == (5, 45, True, True)
        assert out["text"].endswith(out["more"])
        assert out["more"].startswith(f"{ELLIPSIS} 45 or more older changes left out (transactions 67-")
        as_json = handle.context(limit=5, format="json")
        assert (as_json["left_out"], as_json["left_out_at_least"]) == (45, True) and len(as_json["transactions"]) == 5
        small = handle.context(since=handle.latest_tx() - 20, limit=5)   # 10 transactions of one new entity each
        assert (small["left_out"], "left_out_at_least" in small) == (5, False)
        assert small["more"].startswith(f"{ELLIPSIS} 5 older changes left out")
        for budget in (150, 240, 400, 3000):   # 100 is below the JSON skeleton of a count at the cap (122)
            for fmt in ("markdown", "json"):
                capped = handle.context(budget=budget, limit=20, format=fmt)
                assert (len(capped["text"]) if fmt == "markdown" else len(dumps(capped))) <= budget
                assert capped["truncated"] and capped["left_out_at_least"]


def test_the_cost_of_a_call_follows_the_cap_not_the_history(monkeypatch):
    monkeypatch.setattr("fgraph.query.context.shape.COUNT_CAP", 100)
    with store_of(300) as small, store_of(3000) as large:
        for options in ({}, {"format": "json"}, {"limit": 50}):
            assert vm_steps(large, **options) < 1.5 * vm_steps(small, **options)
