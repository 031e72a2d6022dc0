"""``fgraph mcp --propose FILE`` through the official SDK's stdio client (issue 51 items 1, 2, 4):
the write tools plan each call exactly as ``--write`` would and append one proposal/1 record to
FILE, never touching the store; reads show what is pending; the tools and the instructions say
that writes are proposals; a hostile FILE is refused."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import fgraph
from fgraph.bridges.proposals.pending import ProposalFile
from tests.support.cli import clean_env, run_cli
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.proposals import AGENT_CALLS as CALLS, ada_store, agent, copy_of, tail
from tests.support.mcp import OURS, call, session_run

PROPOSE_ORDER = ["remember", "forget", "undo", "recall", "about", "why", "history", "query", "datoms", "receipt",
                 "schema", "explain", "context"]



@pytest.fixture
def store(tmp_path):
    return ada_store(tmp_path / "m.db", unique_email=True)


def make_calls(calls):
    async def script(session):
        return (await agent(calls)(session))[0]
    return script


def file_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_write_tools_are_listed_as_proposals_and_the_instructions_say_so(store, tmp_path):
    async def script(session):
        return (await session.list_tools()).tools
    tools = session_run(OURS, store, script, "--propose", str(tmp_path / "p.ndjson"))
    assert [t.name for t in tools] == PROPOSE_ORDER
    for tool in tools[:3]:
        assert tool.description.startswith("PROPOSES, pending a person's review")
        assert tool.annotations.read_only_hint is False and tool.annotations.destructive_hint is False
        assert tool.annotations.idempotent_hint is True
    write_schemas = session_run(OURS, store, lambda s: _schemas(s), "--write")
    assert {t.name: t.input_schema for t in tools[:3]} == write_schemas


async def _schemas(session):
    return {t.name: t.input_schema for t in (await session.list_tools()).tools[:3]}


def test_the_instructions_say_writes_are_proposals(store, tmp_path):
    from fgraph.mcp.server import INSTRUCTIONS, PROPOSE_INSTRUCTIONS, build
    with fgraph.connect(str(store), read_only=True) as db:
        assert build(db, write=False, propose=str(tmp_path / "p.ndjson")).instructions == PROPOSE_INSTRUCTIONS
        assert build(db, write=False).instructions == INSTRUCTIONS
    assert "PROPOSALS" in PROPOSE_INSTRUCTIONS and "pending" in PROPOSE_INSTRUCTIONS


def test_each_proposal_is_the_event_a_write_session_would_commit_and_the_store_is_untouched(store, tmp_path):
    direct = copy_of(store, "direct.db")
    before, proposals = store.read_bytes(), tmp_path / "p.ndjson"
    proposed = session_run(OURS, store, make_calls(CALLS), "--propose", str(proposals))
    written = session_run(OURS, direct, make_calls(CALLS), "--write")
    assert [answer["data"]["status"] for answer in proposed] == ["proposed"] * len(CALLS)
    assert [answer["data"]["tx"] for answer in proposed] == [answer["data"]["tx"] for answer in written]
    assert store.read_bytes() == before and tail(store) == tail(copy_of(store, "again.db"))
    records = ProposalFile(str(proposals)).records()
    assert [r["id"] for r in records] == [answer["data"]["proposal"] for answer in proposed]
    new_events = tail(direct)[len(tail(store)):]
    assert [r["event"] for r in records] == new_events    # the bytes tail printed in the --write session
    assert [(r["tool"], r["by"], r["client"], r["source"]) for r in records] == [
        ("remember", "mcp:probe", "probe", None), ("remember", "mcp:probe", "probe", "chat"),
        ("forget", "mcp:probe", "probe", None), ("undo", "mcp:probe", "probe", None),
        ("remember", "mcp:probe", "probe", None)]
    assert len({r["session"] for r in records}) == 1 and all(r["basis_tx"] == proposed[0]["data"]["basis_tx"]
                                                             for r in records)
    assert file_lines(proposals) == [line for line in file_lines(proposals) if line.endswith(b"}\n")]


def test_a_repeated_identical_call_is_the_same_proposal_and_no_new_line(store, tmp_path):
    proposals = tmp_path / "p.ndjson"
    first = {"facts": {"id": "ada", "person/city": "London"}, "operation_id": "o1"}

    async def script(session):
        answers = [await session.call_tool("remember", first) for _ in range(3)]
        return [a.structured_content["data"] for a in answers]
    answers = session_run(OURS, store, script, "--propose", str(proposals))
    assert len({a["proposal"] for a in answers}) == 1 and [a.get("repeated") for a in answers] == [None, True, True]
    assert len(file_lines(proposals)) == 1
    # another server (another session) repeating it gets the same id and appends nothing either
    again = session_run(OURS, store, call("remember", **first), "--propose", str(proposals), client="other")
    assert again[1]["data"]["proposal"] == answers[0]["proposal"] and len(file_lines(proposals)) == 1


@pytest.mark.parametrize(("name", "arguments"), [
    ("remember", {"facts": {"id": "bob", "person/email": "ada@x"}, "operation_id": "u1"}),     # uniqueness
    ("remember", {"facts": {"id": "bob", "person/email": 7}, "operation_id": "t1"}),           # the declared type
    ("forget", {"entity": "ada", "operation_id": "b1", "if_basis_tx": 64}),                    # a stale basis
    ("undo", {"tx": 9999, "operation_id": "n1", "if_basis_tx": 70}),                            # no such tx
    ("remember", {"operation_id": "e1"}),                                                      # nothing to remember
])
def test_a_call_the_store_would_refuse_is_refused_now_with_the_same_error(store, tmp_path, name, arguments):
    proposals = tmp_path / "p.ndjson"
    refused = session_run(OURS, store, call(name, **arguments), "--propose", str(proposals))
    direct = session_run(OURS, copy_of(store, "direct.db"), call(name, **arguments), "--write")
    assert refused[0] and direct[0]
    assert refused[2] == direct[2]
    assert not proposals.exists() or proposals.read_bytes() == b""


def test_reads_answer_from_the_store_and_name_the_pending_proposals(store, tmp_path):
    proposals = tmp_path / "p.ndjson"

    async def script(session):
        city = await session.call_tool("remember", {"facts": {"id": "ada", "person/city": "London"},
                                                    "operation_id": "o1"})
        note = await session.call_tool("remember", {"text": "Grace wrote the compiler", "key": "note-g",
                                                    "operation_id": "o2"})
        reads = {f"{name} {arguments.get('entity', arguments.get('query'))}": (await session.call_tool(name, arguments))
                 for name, arguments in [
            ("about", {"entity": "ada"}), ("why", {"entity": "ada"}), ("history", {"entity": "ADA"}),
            ("about", {"entity": "grace"}), ("recall", {"query": "Ada Lovelace"}), ("about", {"entity": "note-g"})]}
        return city.structured_content["data"]["proposal"], note.structured_content["data"]["proposal"], reads
    city, note, reads = session_run(OURS, store, script, "--propose", str(proposals))
    assert "person/city" not in reads["about ada"].structured_content["data"]     # the store as it is
    assert reads["about ada"].structured_content["pending"] == [city]
    assert reads["why ada"].structured_content["pending"] == [city]
    assert reads["history ADA"].structured_content["pending"] == [city]   # a name in another case too
    assert reads["about grace"].structured_content["pending"] == []
    hits = {hit["entity"]: hit["pending"] for hit in reads["recall Ada Lovelace"].structured_content["data"]["hits"]}
    assert hits.get("ada") == [city]
    missing = reads["about note-g"]
    assert missing.is_error and note in missing.content[0].text


def test_a_name_only_a_pending_proposal_creates_is_not_found_with_the_proposal_named(store, tmp_path):
    proposals = tmp_path / "p.ndjson"

    async def script(session):
        made = await session.call_tool("remember", {"facts": {"id": "carol", "person/name": "Carol"},
                                                    "operation_id": "c1"})
        about = await session.call_tool("about", {"entity": "carol"})
        ada = await session.call_tool("about", {"entity": "ada"})
        return made.structured_content["data"]["proposal"], about, ada.structured_content
    made, about, ada = session_run(OURS, store, script, "--propose", str(proposals))
    assert about.is_error and "not found" in about.content[0].text and made in about.content[0].text
    assert ada["pending"] == []


def test_two_servers_plan_on_each_others_proposals_and_a_direct_write_rebuilds_the_copy(store, tmp_path):
    """In process: two proposing tool sets on one file see each other's lines; a commit to the store
    (someone accepted, or wrote) makes the next plan start from the new store."""
    from fgraph.mcp.propose import ProposingTools
    proposals = str(tmp_path / "p.ndjson")
    with fgraph.connect(str(store), read_only=True) as db_a, fgraph.connect(str(store), read_only=True) as db_b:
        a = ProposingTools(db_a, proposals, clock=CONFORMANCE_CLOCK, session="s-a")
        b = ProposingTools(db_b, proposals, clock=CONFORMANCE_CLOCK, session="s-b")
        first = a.remember("mcp:a", "o1", facts={"id": "ada", "person/city": "London"})["data"]
        second = b.remember("mcp:b", "o2", facts={"id": "ada", "person/city": "Paris"})["data"]
        assert second["tx"] > first["tx"]
        assert [fact["v"] for fact in second["retracted"]] == ["London"]   # planned on a's proposal
        assert b.about("ada")["pending"] == [first["proposal"], second["proposal"]]
        with fgraph.connect(str(store), clock=CONFORMANCE_CLOCK) as writer:
            committed = writer.transact({"id": "ada", "person/born": 1816})["tx"]
        third = a.remember("mcp:a", "o3", facts={"id": "ada", "person/nick": "Countess"})["data"]
        assert third["basis_tx"] > committed and a.copy.store_tx == committed
    records = ProposalFile(proposals).records()
    assert [(r["session"], r["basis_tx"]) for r in records] == [("s-a", first["basis_tx"]),
                                                                 ("s-b", first["basis_tx"]), ("s-a", committed)]


# ------------------------------------------------------------------ a hostile proposals file

def _start(store, proposals):
    return run_cli("mcp", "--propose", proposals, db=store, env=clean_env(), input="")


@pytest.mark.parametrize("kind", ["link", "fifo", "directory"])
def test_a_proposals_file_that_is_a_link_fifo_or_directory_is_refused_at_start(store, tmp_path, kind):
    proposals, real = tmp_path / "p.ndjson", tmp_path / "real.ndjson"
    if kind == "link":
        real.write_bytes(b"")
        proposals.symlink_to(real)
    elif kind == "fifo":
        os.mkfifo(proposals)
    else:
        proposals.mkdir()
    code, _, err = _start(store, proposals)
    assert code != 0 and "Traceback" not in err
    assert {"link": "symbolic link", "fifo": "FIFO", "directory": "directory"}[kind] in err
    if kind == "link":
        assert real.read_bytes() == b""


def test_flags_that_exclude_each_other(store, tmp_path):
    code, _, err = run_cli("mcp", "--write", "--propose", tmp_path / "p.ndjson", db=store, env=clean_env(), input="")
    assert code == 2 and "--propose and --write exclude each other" in err
    code, _, err = run_cli("mcp", "--allow-excise", "--propose", tmp_path / "p.ndjson", db=store, env=clean_env(),
                           input="")
    assert code == 2 and "never proposed" in err


@pytest.fixture
def unwritable(tmp_path):
    """A proposals file nobody may append to: mode 0444, and immutable for root (chattr +i)."""
    path = tmp_path / "p.ndjson"
    path.write_bytes(b"")
    path.chmod(0o444)
    locked = os.geteuid() == 0
    if locked and (shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)]).returncode != 0):
        pytest.skip("root writes any file: chattr +i is not available here")
    yield path
    if locked:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    path.chmod(0o644)


def test_a_read_only_proposals_file_refuses_the_proposal_and_plans_it_again_later(store, unwritable):
    from fgraph.mcp.propose import ProposingTools
    with fgraph.connect(str(store), read_only=True) as db:
        fresh = ProposingTools(db, str(unwritable.with_name("fresh.ndjson")), clock=CONFORMANCE_CLOCK)
        expected = fresh.remember("mcp:a", "o1", facts={"id": "ada", "person/city": "London"})["data"]["tx"]
        tools = ProposingTools(db, str(unwritable), clock=CONFORMANCE_CLOCK)
        with pytest.raises(fgraph.FgraphError) as refused:
            tools.remember("mcp:a", "o1", facts={"id": "ada", "person/city": "London"})
        assert type(refused.value).__name__ == "ReadOnly" and "nothing was proposed" in refused.value.hint
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(unwritable)], check=True)
        unwritable.chmod(0o644)
        again = tools.remember("mcp:a", "o1", facts={"id": "ada", "person/city": "London"})["data"]
        if os.geteuid() == 0:
            subprocess.run(["chattr", "+i", str(unwritable)], check=True)
    # the refused plan left nothing behind in the copy: the same transaction as on a fresh copy
    assert again["tx"] == expected
    assert len(ProposalFile(str(unwritable)).records()) == 1


def test_an_operation_id_a_pending_proposal_used_is_refused_for_another_call_even_after_a_rebuild(store, tmp_path):
    from fgraph.mcp.propose import ProposingTools
    proposals = str(tmp_path / "p.ndjson")
    with fgraph.connect(str(store), read_only=True) as db:
        first = ProposingTools(db, proposals, clock=CONFORMANCE_CLOCK)
        first.remember("mcp:a", "o1", facts={"id": "ada", "person/city": "London"})
        other = ProposingTools(db, proposals, clock=CONFORMANCE_CLOCK)   # its copy is built from the lines
        for tools in (first, other):
            with pytest.raises(fgraph.FgraphError) as refused:
                tools.remember("mcp:a", "o1", facts={"id": "ada", "person/city": "Paris"})
            assert type(refused.value).__name__ == "Conflict" and "already used for another request" in str(refused.value)
    assert len(ProposalFile(proposals).records()) == 1
