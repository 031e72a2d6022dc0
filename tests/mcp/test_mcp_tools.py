"""The MCP tool bodies without a client (fgraph/mcp/tools.py): the 262,144-byte cap at its
edge, the compact report of a committed write too large for it (README decision 12), and the
argument rules of spec 10 §3.3 and §5."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.core.canonical import dumps_bytes
from fgraph.mcp.tools import RESPONSE_CAP, Tools, compact
from tests.support.constants import CONFORMANCE_CLOCK


@pytest.fixture
def tools():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as db:
        yield Tools(db)


def _about_size(tools, text: str) -> int:
    return len(dumps_bytes({"ok": True, "basis_tx": tools.db.latest_tx(), "data": {"a/t": text}}))


def test_the_cap_admits_exactly_262144_bytes_and_refuses_one_more(tools):
    tools.db.transact({"id": "e", "a/t": "x"})
    fill = RESPONSE_CAP - _about_size(tools, "")
    exact = "é" * (fill // 2) + "x" * (fill % 2)  # 2-byte characters count twice
    tools.db.transact({"id": "e", "a/t": exact})
    assert _about_size(tools, tools.db.entity("e")["a/t"]) == RESPONSE_CAP
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
