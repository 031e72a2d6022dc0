"""``context(by="entity")`` (issue 30 item 4): an imported decision log or MCP memory file gives
one compact line per entity, newest first by the records' own time, with its [Type] label, main
text, "because:" rationale and tags, no ids or raw instants, within the budget; a note without a
key shows by its text; the library, the CLI, the MCP tool and the resource render the same
items, and the last line names the call that gets the rest in the words of each face."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fgraph
from fgraph.core.canonical import dumps
from fgraph.core.values import parse_instant
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.cli import run_cli
from tests.support.context import store_of, vm_steps
from tests.support.paths import FIXTURES

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
IMPORTS = FIXTURES / "import"
DECISIONS, MEMORY = IMPORTS / "decisions.jsonl", IMPORTS / "mcp-memory.jsonl"
ENV = {"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": "context-entities", "PATH": ""}
PREFERENCE = {"id": "0b7e1c2a-0000-5000-8000-000000000001", "type": "preference",
              "content": {"what": "Prefer short answers with code first", "why": "Long prose hides the diff"},
              "entities": ["fgraph"], "relations": [], "identity": {"user_id": "alice"},
              "metadata": {"timestamp": "2026-03-10T08:00:00Z", "confidence": 0.8}}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-")


def valid_records() -> list:
    out = []
    for line in DECISIONS.read_text(encoding="utf-8").split("\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "id" in record and isinstance(record.get("content"), dict) \
                and record not in out:
            out.append(record)
    return out


@pytest.fixture(scope="module")
def decisions(tmp_path_factory) -> Path:
    """The decision-log fixture plus one preference record, imported through the CLI."""
    folder = tmp_path_factory.mktemp("decisions")
    extra = folder / "preference.jsonl"
    extra.write_text(json.dumps(PREFERENCE) + "\n", encoding="utf-8")
    db = folder / "d.db"
    for path in (DECISIONS, extra):
        # a label, not the path: what fits the budget must not depend on where the clone lives
        # the fixture's bad lines are left out on purpose: an import that drops one exits 1 without --skip-bad
        proc = run_cli("import", "jsonl-log", path, "--source", path.name, "--skip-bad", db=db, env=ENV)
        assert proc.returncode == 0, proc.stderr
    return db


@pytest.fixture(scope="module")
def memory(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("memory") / "m.db"
    proc = run_cli("import", "mcp-memory", MEMORY, db=db, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return db


@pytest.fixture
def store():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as handle:
        handle.transact({"id": "ada", "person/born": 1815, "person/name": "Ada Lovelace"}, by="importer",
                        source="batch:1")
        handle.transact({"id": "ada", "person/born": 1816}, by="mcp:claude")
        handle.transact({"id": "bob", "person/tags": {"json": ["x", 1]}, "person/friend": {"ref": "ada"}})
        handle.transact({"id": "launch", "event/at": {"instant": "2026-02-02T00:00:00Z"}, "event/id": "E1"})
        yield handle


# ----------------------------------------------------------------- the decision log

def test_a_decision_log_gives_one_line_per_decision_newest_first_by_its_own_time(decisions):
    with fgraph.connect(str(decisions), read_only=True) as db:
        out = db.context(by="entity", limit=13, budget=4000)
    records = valid_records() + [PREFERENCE]
    newest_first = sorted(records, key=lambda r: parse_instant(r["metadata"]["timestamp"]), reverse=True)
    lines = out["text"].split("\n")
    assert (out["items"], out["left_out"], out["truncated"]) == (13, 0, False) and len(lines) == 13
    assert [line.split("] ", 1)[1].split(" — ")[0] for line in lines] == [r["content"]["what"] for r in newest_first]
    assert lines[0].startswith("- [Preference] Prefer short answers with code first — because: Long prose hides the")
    assert all(line.startswith("- [Decision] ") for line in lines[1:])
    assert lines[-1].startswith("- [Decision] Drop the legacy XML export")   # imported last, written first
    assert all(f"because: {r['content']['why']}" in out["text"] for r in records)
    assert "— tags: Auth Service, PostgreSQL — at 2026-03-02T11:40:12Z by bob from " in out["text"]
    for banned in ("decision/id", "decision/user", "decision/", '{"instant"', "memory/name"):
        assert banned not in out["text"]
    assert not UUID.search(out["text"])


def test_the_default_fits_3000_characters_and_says_how_to_get_the_rest(decisions):
    with fgraph.connect(str(decisions), read_only=True) as db:
        out = db.context(by="entity")
        assert len(out["text"]) <= 3000 and (out["items"], out["left_out"]) == (10, 3)
        assert out["text"].endswith(out["more"]) and out["more"] == (
            "… 3 older entities left out; get them with: fgraph context --by entity --since 64 --limit 13 "
            "--budget 3000")
        assert db.context(by="entity", limit=13, budget=3000)["truncated"] is False   # the advice works
        assert db.context()["text"] == db.context(by="change")["text"]   # the default stays the change view


def test_type_and_entity_filters(decisions):
    with fgraph.connect(str(decisions), read_only=True) as db:
        assert db.context(by="entity", type="Preference")["text"].startswith("- [Preference] ")
        only = db.context(by="entity", type="decision", limit=20)
        assert (only["items"], only["left_out"]) == (12, 0) and "[Preference]" not in only["text"]
        with pytest.raises(fgraph.ValueTypeError, match="its types: decision, preference"):
            db.context(by="entity", type="nothing")   # an unknown type names the ones there are (issue 50)
        one = db.context(by="entity", entity="decision:" + PREFERENCE["id"])
        assert one["items"] == 1 and one["text"].startswith("- [Preference] ")
        # a name with only refs (a relation hub) is not an item of its own: it is a tag of the others
        assert db.context(by="entity", entity="fgraph")["items"] == 0
        with pytest.raises(fgraph.NotFound):
            db.context(by="entity", entity="nobody")


# ----------------------------------------------------------------- other stores

def test_an_mcp_memory_file_gives_typed_named_entities_with_their_relations_as_tags(memory):
    with fgraph.connect(str(memory), read_only=True) as db:
        out = db.context(by="entity")
    lines = out["text"].split("\n")
    assert out["items"] == 7 and not out["truncated"]   # the 7 entities; SQLite (only a relation end) is none
    ada = next(line for line in lines if "Ada Lovelace:" in line)
    assert ada.startswith("- [Person] Ada Lovelace: Wrote the first published algorithm for the Analytical Engine; ")
    assert "tags: Charles Babbage, Analytical Engine" in ada and "Born 1815" not in ada
    assert "- [Concept] Empty Concept — tags: fgraph — at " in out["text"]
    assert "memory/" not in out["text"] and "\n" not in "".join(line for line in lines if "Zürich" in line)


def test_a_note_without_a_key_is_shown_by_its_text_and_instants_as_rfc3339(store):
    from fgraph.mcp.tools import Tools
    Tools(store).remember("mcp:probe", "op-1", text="Ada prefers vim\nover emacs")
    out = store.context(by="entity")
    lines = out["text"].split("\n")
    assert lines[0] == "- [Memory] Ada prefers vim over emacs — at 2026-01-01T00:00:05Z by mcp:probe"
    assert lines[1] == "- [Event] launch: event/at: 2026-02-02T00:00:00.000000Z — at 2026-01-01T00:00:04Z"
    assert lines[2] == '- [Person] bob: person/tags: ["x",1] — tags: ada — at 2026-01-01T00:00:03Z'
    assert lines[3] == "- [Person] ada: Ada Lovelace — at 2026-01-01T00:00:02Z by mcp:claude"
    assert "E1" not in out["text"]   # event/id is bookkeeping
    note = store.context(by="entity", format="json")["entities"][0]
    assert isinstance(note["entity"], int) and note["text"] == "Ada prefers vim over emacs"


def test_deleted_entities_and_schema_are_not_items(store):
    store.declare("task/title", type="text")
    store.retract("bob")
    out = store.context(by="entity")
    assert out["items"] == 2 and "bob" not in out["text"] and "task/title" not in out["text"]


def test_json_holds_the_same_items(decisions):
    with fgraph.connect(str(decisions), read_only=True) as db:
        text, data = db.context(by="entity", limit=3), db.context(by="entity", limit=3, format="json")
    assert [e["text"] for e in data["entities"]] == [line.split("] ", 1)[1].split(" — ")[0]
                                                      for line in text["text"].split("\n")[:3]]
    first = data["entities"][0]
    assert first == {"entity": "decision:" + PREFERENCE["id"], "label": "Preference",
                     "text": "Prefer short answers with code first", "because": "Long prose hides the diff",
                     "tags": ["fgraph"], "at": "2026-03-10T08:00:00.000000Z", "tx": first["tx"], "by": "alice",
                     "source": first["source"]}
    assert data["more"].startswith("… 10 older entities left out; get them with: fgraph context --by entity")


def test_bad_options_are_type_errors(store):
    with pytest.raises(fgraph.TypeError, match="change .*or entity"):
        store.context(by="fact")
    with pytest.raises(fgraph.TypeError, match="filters entities"):
        store.context(type="decision")
    with pytest.raises(fgraph.TypeError):
        store.context(by="entity", type="")
    with pytest.raises(fgraph.TypeError, match="cli, tool or resource"):
        store.context(more_hint="shell")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(100, 3000), limit=st.integers(1, 15), fmt=st.sampled_from(["markdown", "json"]),
       hint=st.sampled_from(["cli", "tool", "resource"]))
def test_output_never_exceeds_the_budget_and_counts_add_up(store, budget, limit, fmt, hint):
    out = store.context(by="entity", budget=budget, limit=limit, format=fmt, more_hint=hint)
    assert (len(out["text"]) if fmt == "markdown" else len(dumps(out))) <= budget
    assert out["items"] + out["left_out"] == 3 and out["items"] <= limit
    assert out["truncated"] == (out["left_out"] > 0) == ("more" in out)
    assert store.context(by="entity", budget=budget, limit=limit, format=fmt, more_hint=hint) == out


def test_a_big_history_is_read_newest_first_within_the_limit(tmp_path):
    with fgraph.connect(str(tmp_path / "big.db"), clock=CONFORMANCE_CLOCK) as db:
        for k in range(300):
            db.transact({"id": f"n{k}", "n/text": f"note {k}"})
        out = db.context(by="entity", limit=5)
        assert (out["items"], out["left_out"]) == (5, 295) and out["text"].startswith("- [N] n299: note 299 — ")


# ----------------------------------------------------------------- the faces

def test_the_cli_prints_the_same_text_and_json(decisions):
    with fgraph.connect(str(decisions), read_only=True) as db:
        expected = db.context(by="entity", type="decision", budget=1500)
        expected_json = db.context(by="entity", limit=2, format="json")
    proc = run_cli("context", "--by", "entity", "--type", "decision", "--budget", "1500", db=decisions, env=ENV)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, expected["text"] + "\n", "")
    assert "get them with: fgraph context --by entity --since 64 --limit 12 --budget " in proc.stdout
    proc = run_cli("context", "--by", "entity", "--limit", "2", "--format", "json", db=decisions, env=ENV)
    assert proc.returncode == 0 and json.loads(proc.stdout) == expected_json
    proc = run_cli("context", "--by", "change", "--type", "decision", db=decisions, env=ENV)
    assert proc.returncode == 1 and proc.stderr.startswith("TypeError: ") and "--by entity" in proc.stderr
    assert run_cli("context", "--by", "fact", db=decisions, env=ENV).returncode == 2


def test_the_mcp_tool_and_resource_name_mcp_calls(decisions):
    from fgraph.mcp.resources import Resources
    from fgraph.mcp.tools import Tools
    with fgraph.connect(str(decisions), read_only=True) as db:
        tools = Tools(db)
        data = tools.context(by="entity", limit=3)["data"]
        assert data == db.context(by="entity", limit=3, more_hint="tool")
        assert data["more"] == ('… 10 older entities left out; get them with: context(by="entity", since=64, '
                                f'limit=13, budget={data["more"].rsplit("=", 1)[1]}')
        call = dict(by="entity", since=64, limit=13, budget=int(data["more"].rsplit("=", 1)[1].rstrip(")")))
        assert tools.context(**call)["data"]["truncated"] is False   # the named call gets the rest
        assert tools.context(by="entity", type="preference")["data"]["items"] == 1
        resources = Resources(db, tools.lock)
        body = resources.context(limit="3", by="entity")
        assert body == db.context(by="entity", limit=3, more_hint="resource")
        uri = body["more"].split("get them with: ")[1]
        assert uri.startswith("fgraph://context?by=entity&since=64&limit=13&budget=")
        rest = resources.context(**dict(parse_qsl(urlsplit(uri).query)))
        assert rest["items"] == 13 and rest["truncated"] is False
        assert resources.context(by="entity", type="preference")["items"] == 1
        assert not re.search(r"fgraph (context|tail)", data["text"] + body["text"])   # no shell command over MCP
        with pytest.raises(fgraph.TypeError):
            resources.context(by="fact")


def test_the_served_template_takes_by_limit_and_type(decisions):
    import anyio

    from fgraph.mcp.server import build

    async def read(uri):
        with fgraph.connect(str(decisions), read_only=True) as db:
            (content,) = list(await build(db, write=False).read_resource(uri))
            return json.loads(content.content)
    body = anyio.run(read, "fgraph://context?by=entity&limit=2&type=decision")
    assert body["items"] == 2 and body["text"].startswith("- [Decision] Pin Node to the LTS line in CI")


@pytest.fixture(scope="module")
def growing(tmp_path_factory) -> Path:
    """Forty notes whose texts grow longer with age: the newest items are the shortest, so the
    first page underestimates what the rest needs."""
    db = tmp_path_factory.mktemp("growing") / "g.db"
    with fgraph.connect(str(db), clock=CONFORMANCE_CLOCK) as handle:
        for k in range(40):
            handle.transact({"id": f"n{k}", "n/text": "word " * (60 - k)})
    return db


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(300, 4000), limit=st.integers(1, 12), by=st.sampled_from(["entity", "change"]),
       fmt=st.sampled_from(["markdown", "json"]))
def test_the_named_call_gets_every_item_left_out(growing, budget, limit, by, fmt):
    with fgraph.connect(str(growing), read_only=True) as db:
        out = db.context(by=by, budget=budget, limit=limit, format=fmt, more_hint="tool")
        assert out["truncated"]
        named = re.fullmatch(r".*get them with: context\((.*)\)", out["more"])
        assert named, out["more"]   # the reserve always leaves room for the call at these budgets
        arguments = {key: json.loads(value) for key, value in re.findall(r'(\w+)=("[^"]*"|\d+)', named.group(1))}
        rest = db.context(**arguments, format=fmt, more_hint="tool")
        assert rest["truncated"] is False and rest["items"] == out["items"] + out["left_out"]


def test_past_the_count_cap_the_last_line_says_or_more(monkeypatch):
    """Decision C3: the entities of the window are counted up to the cap, then "N or more"."""
    monkeypatch.setattr("fgraph.query.context.shape.COUNT_CAP", 40)
    with store_of(300) as handle:
        out = handle.context(by="entity", limit=5)
        assert (out["items"], out["left_out"], out["truncated"], out["left_out_at_least"]) == (5, 35, True, True)
        assert out["text"].endswith(out["more"]) and out["more"].startswith("… 35 or more older entities left out")
        assert "--limit 40 " in out["more"]   # the named call asks for as many as were counted
        as_json = handle.context(by="entity", limit=5, format="json")
        assert (as_json["left_out"], as_json["left_out_at_least"], len(as_json["entities"])) == (35, True, 5)
        exact = handle.context(by="entity", limit=5, entity="n3")
        assert "left_out_at_least" not in exact and exact["items"] == 1
        for budget in (200, 400, 3000):
            for fmt in ("markdown", "json"):
                capped = handle.context(by="entity", budget=budget, limit=20, format=fmt)
                assert (len(capped["text"]) if fmt == "markdown" else len(dumps(capped))) <= budget


def test_the_cost_of_a_call_follows_the_cap_not_the_history(monkeypatch):
    """The count stops at the cap and each transaction's time is one index probe (it once read
    every fgraph/at fact per transaction), so a ten times longer history costs the same."""
    monkeypatch.setattr("fgraph.query.context.shape.COUNT_CAP", 100)
    with store_of(300) as small, store_of(3000) as large:
        for options in ({}, {"format": "json"}, {"limit": 50}):
            assert vm_steps(large, by="entity", **options) < 1.5 * vm_steps(small, by="entity", **options)
