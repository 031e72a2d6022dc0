"""The proposals workflow end to end, driven by a real MCP client (issue 51, "Tests and evidence"):
an agent proposes through the SDK's stdio client, reads back (pending shown), a person accepts a
subset with ``fgraph proposals accept`` and rejects the rest; the store's ``tail`` then holds
exactly the accepted events, byte-identical to what a ``--write`` session making those calls on
a copy of the same history wrote (``FGRAPH_CLOCK`` and ``FGRAPH_EVENT_SEED`` fixed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fgraph.bridges.proposals.pending import ProposalFile
from tests.support.cli import clean_env, run_cli
from tests.support.proposals import AGENT_CALLS as CALLS, ada_store, agent, copy_of, tail
from tests.support.mcp import OURS, session_run



@pytest.fixture
def store(tmp_path):
    return ada_store(tmp_path / "m.db")


def proposals_cli(store: Path, *args) -> dict:
    code, out, err = run_cli("proposals", *args, db=store, json=True, env=clean_env())
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("accepted", [3, 5])
def test_propose_read_back_accept_a_subset_reject_the_rest(store, tmp_path, accepted):
    proposals = tmp_path / "proposals.ndjson"
    direct = copy_of(store, "direct.db")
    before = tail(store)
    answers, reads = session_run(OURS, store, agent(CALLS, [("about", {"entity": "ada"}), ("why", {"entity": "ada"})]),
                                 "--propose", str(proposals), client="claude-code")
    ids = [answer["data"]["proposal"] for answer in answers]
    assert tail(store) == before                                   # nothing reached the store
    # the city, the forgotten birth year and the undo touch ada; the note and carol (who refers to ada) do not
    assert reads[0]["pending"] == reads[1]["pending"] == [ids[0], ids[2], ids[3]]

    # the person: review what accepting the first ones means, accept exactly that, reject the rest
    chosen, rest = ids[:accepted], ids[accepted:]
    listed = proposals_cli(store, "list", proposals, *chosen)
    assert [p["id"] for p in listed["proposals"]] == chosen
    assert {(p["by"], p["client"]) for p in listed["proposals"]} == {("mcp:claude-code", "claude-code")}
    done = proposals_cli(store, "accept", proposals, *chosen, "--expect-digest", listed["digest"], "--by", "alice")
    assert done["accepted"] == chosen and not done["conflicts"]
    if rest:
        assert proposals_cli(store, "reject", proposals, *rest, "--by", "alice")["rejected"] == rest

    # the --write session making the accepted calls on a copy of the same history
    session_run(OURS, direct, agent(CALLS[:accepted]), "--write", client="claude-code")
    assert tail(store) == tail(direct)                             # byte for byte
    assert len(tail(store)) == len(before) + accepted
    assert ProposalFile(str(proposals)).records() == []
    audit = [json.loads(line) for line in Path(str(proposals) + ".decided.ndjson").read_text().splitlines()]
    assert sorted(r["id"] for d in audit for r in d["accepted"]) == sorted(chosen)
    assert sorted(r["id"] for d in audit for r in d["rejected"]) == sorted(rest)


def test_the_agent_proposes_on_after_a_decision(store, tmp_path):
    """After an accept the store moved and the file was rewritten: the server's copy is rebuilt
    and the next proposal is planned on the new store, its answer's basis the accepted one."""
    proposals = tmp_path / "proposals.ndjson"

    async def script(session):
        first = await session.call_tool("remember", {"facts": {"id": "ada", "person/city": "London"},
                                                     "operation_id": "o1"})
        listed = proposals_cli(store, "list", proposals)
        proposals_cli(store, "accept", proposals, "--all", "--expect-digest", listed["digest"])
        about = await session.call_tool("about", {"entity": "ada"})
        second = await session.call_tool("remember", {"facts": {"id": "ada", "person/city": "Paris"},
                                                      "operation_id": "o2", "if_basis_tx": about.structured_content[
                                                          "basis_tx"]})
        return first.structured_content, about.structured_content, second
    first, about, second = session_run(OURS, store, script, "--propose", str(proposals))
    assert about["data"]["person/city"] == "London" and about["pending"] == []
    assert not second.is_error, second.content[0].text
    record, = ProposalFile(str(proposals)).records()
    assert record["basis_tx"] == about["basis_tx"] == first["data"]["tx"]
    assert [fact["v"] for fact in second.structured_content["data"]["retracted"]] == ["London"]
