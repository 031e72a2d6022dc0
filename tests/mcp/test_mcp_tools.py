"""The MCP tool bodies without a client (fgraph/mcp/tools.py): the 262,144-byte cap at its
edge, the compact report of a committed write too large for it (README decision 12), and the
argument rules of spec 10 §3.3 and §5."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.core.canonical import dumps_bytes
from fgraph.core.limits import MCP_INCOMING_LIMIT, MCP_RESPONSE_BYTES
from fgraph.mcp.tools import Tools, compact, fit_incoming
from tests.support.constants import CONFORMANCE_CLOCK


@pytest.fixture
def tools():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as db:
        yield Tools(db)


def _about_size(tools, text: str) -> int:
    return len(dumps_bytes({"ok": True, "basis_tx": tools.db.latest_tx(), "data": {"a/t": text}}))


def test_the_cap_admits_exactly_262144_bytes_and_refuses_one_more(tools):
    tools.db.transact({"id": "e", "a/t": "x"})
    fill = MCP_RESPONSE_BYTES - _about_size(tools, "")
    exact = "é" * (fill // 2) + "x" * (fill % 2)  # 2-byte characters count twice
    tools.db.transact({"id": "e", "a/t": exact})
    assert _about_size(tools, tools.db.entity("e")["a/t"]) == MCP_RESPONSE_BYTES
    assert tools.about("e")["data"]["a/t"].startswith("é")
    tools.db.transact({"id": "e", "a/t": exact + "x"})
    with pytest.raises(fgraph.TooLarge) as caught:
        tools.about("e")
    assert "256 KiB" in caught.value.message and caught.value.hint


def test_a_committed_write_too_large_to_report_comes_back_compact(tools):
    result = tools.remember("mcp:probe", "big-1", text="y" * 270_000)
    data = result["data"]
    assert data["truncated"] is True and data["status"] == "applied" and data["asserted"] == 3
    assert result["basis_tx"] == data["tx"] == tools.db.latest_tx()
    again = tools.remember("mcp:probe", "big-1", text="y" * 270_000)
    assert again["data"]["status"] == "already_applied" and again["basis_tx"] == data["tx"]


def test_compact_keeps_the_first_32_attributes_by_name_and_32_values():
    entity = {f"z/{i:02d}": i for i in range(20)} | {f"a/{i:02d}": [f"v{j:02d}" for j in range(40)] for i in range(20)}
    out = compact(entity)
    assert list(out) == [f"a/{i:02d}" for i in range(20)] + [f"z/{i:02d}" for i in range(12)]
    assert out["a/00"] == [f"v{j:02d}" for j in range(32)]


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda t: t.about("e", 3), "depth"),
    (lambda t: t.about(1.5), "entity reference"),
    (lambda t: t.about({"ref": "e"}), "entity reference"),
    (lambda t: t.why("e", None, 101), "limit"),
    (lambda t: t.recall("x", 0), "k"),
    (lambda t: t.recall("x", 1, 3), "expand"),
    (lambda t: t.remember("mcp:p", ""), "operation_id"),
    (lambda t: t.remember("mcp:p", "o", text="   "), "blank"),
    (lambda t: t.remember("mcp:p", "o", text="t", key=""), "key"),
    (lambda t: t.remember("mcp:p", "o", facts=[]), "facts or text"),
    (lambda t: t.remember("mcp:p", "o", text="t", if_basis_tx=63), "if_basis_tx"),
    (lambda t: t.forget("mcp:p", "e", "o", 66, value=1), "attribute"),
    (lambda t: t.query({"find": ["?e"], "where": [["?e", "a/t", "_"]], "limit": True}), "limit"),
    (lambda t: t.query([]), "object"),
])
def test_bad_arguments_are_type_errors_before_any_work(tools, call, fragment):
    tools.db.transact({"id": "e", "a/t": "x"})
    before = tools.db.latest_tx()
    with pytest.raises(fgraph.TypeError) as caught:
        call(tools)
    assert fragment in caught.value.message and caught.value.hint
    assert tools.db.latest_tx() == before


# -- about(incoming=true): ours, the published tool has no incoming (docs/mcp.md) --------------

def _engine(db, referrers: int = 2) -> None:
    db.declare("notes/on", type="ref")
    db.transact({"id": "engine", "thing/kind": "machine"})
    db.transact([{"id": f"n{i:03d}", "notes/on": {"ref": "engine"}} for i in range(referrers)])


def test_about_without_incoming_is_the_compact_entity_unchanged(tools):
    _engine(tools.db)
    assert tools.about("engine") == tools.about("engine", 1, False) == {
        "ok": True, "basis_tx": tools.db.latest_tx(), "data": {"thing/kind": "machine"}}


def test_about_with_incoming_wraps_the_compact_entity_beside_its_referrers(tools):
    _engine(tools.db)
    wide = {"id": "engine", **{f"z/{i:02d}": i for i in range(40)}}
    tools.db.transact(wide)
    result = tools.about("engine", incoming=True)
    data = result["data"]
    assert result["basis_tx"] == tools.db.latest_tx() and list(data) == ["entity", "incoming", "incoming_truncated"]
    assert data["entity"] == compact(tools.db.entity("engine")) and len(data["entity"]) == 32
    assert data["incoming"] == [{"entity": "n000", "attribute": "notes/on", "name": "n000"},
                                {"entity": "n001", "attribute": "notes/on", "name": "n001"}]
    assert data["incoming_truncated"] is False
    assert tools.about("n000", incoming=True)["data"] == {
        "entity": {"notes/on": {"ref": "engine"}}, "incoming": [], "incoming_truncated": False}


def test_about_lists_at_most_100_referrers_and_says_so(tools):
    _engine(tools.db, MCP_INCOMING_LIMIT)
    exact = tools.about("engine", incoming=True)["data"]
    assert len(exact["incoming"]) == MCP_INCOMING_LIMIT and exact["incoming_truncated"] is False
    tools.db.transact({"id": "zz", "notes/on": {"ref": "engine"}})
    over = tools.about("engine", incoming=True)["data"]
    assert over["incoming"] == exact["incoming"] and over["incoming_truncated"] is True


def test_the_incoming_list_is_cut_to_fit_the_cap(tools):
    tools.db.declare("notes/on", type="ref")
    tools.db.transact({"id": "engine", "a/t": "x" * 200_000})
    names = [f"{i:03d}" + "n" * 500 for i in range(80)]  # near the 512-byte name limit
    tools.db.transact([{"id": name, "notes/on": {"ref": "engine"}} for name in names])
    result = tools.about("engine", incoming=True)
    data = result["data"]
    assert data["incoming_truncated"] is True and 0 < len(data["incoming"]) < len(names)
    assert [item["entity"] for item in data["incoming"]] == names[:len(data["incoming"])]
    assert len(dumps_bytes(result)) <= MCP_RESPONSE_BYTES
    one_more = dict(data, incoming=data["incoming"] + [{"entity": names[len(data["incoming"])],
                                                        "attribute": "notes/on", "name": names[len(data["incoming"])]}])
    assert len(dumps_bytes(dict(result, data=one_more))) > MCP_RESPONSE_BYTES  # as many as fit, not fewer
    assert fit_incoming(result["basis_tx"], dict(data, incoming_truncated=False)) == dict(data, incoming_truncated=False)


def test_about_incoming_refuses_a_non_boolean_and_an_unknown_entity(tools):
    _engine(tools.db)
    with pytest.raises(fgraph.TypeError) as caught:
        tools.about("engine", incoming="yes")
    assert "incoming" in caught.value.message and caught.value.hint
    with pytest.raises(fgraph.NotFound):
        tools.about("nobody", incoming=True)


def test_recall_fills_k_with_marked_entity_hits_after_the_published_ones(tools):
    """Decision S1: recall is search(match="fill"); "babbage tea" has no fact holding both words."""
    tools.db.transact([{"id": "babbage", "memory/name": "Charles Babbage", "memory/observation": "Drinks tea"},
                       {"id": "grey", "memory/text": "Earl Grey tea"}])
    found = tools.recall("babbage tea", k=5)["data"]
    assert tools.db.search(text="babbage tea", k=5)["hits"] == []  # the published rule
    assert found["hits"][0]["entity"] == "babbage" and found["hits"][0]["how"] == "entity"
    assert found["hits"][0]["words"] == {"babbage": "fact", "tea": "fact"}
    published = tools.db.search(text="tea", k=5)["hits"]
    assert tools.recall("tea", k=5)["data"]["hits"] == published  # every hit published: nothing added
    assert tools.recall("tea", k=1)["data"]["hits"] == published[:1]
