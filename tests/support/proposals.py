"""Proposals made without an MCP server, as `fgraph mcp --propose` plans them (issue 51): each call
is committed to an in-memory copy of the store plus the pending proposals, and its event line
becomes a proposal/1 record appended to the pending file. For the tests of the decision side."""

from __future__ import annotations

import io
from pathlib import Path

import fgraph
from fgraph.bridges.proposals import records
from fgraph.bridges.proposals.pending import ProposalFile
from tests.support.cli import clean_env, run_cli
from tests.support.constants import CONFORMANCE_CLOCK

# five calls of an agent's session, each may name what an earlier answer said (its basis_tx, its tx)
AGENT_CALLS = [
    ("remember", lambda seen: {"facts": {"id": "ada", "person/city": "London"}, "operation_id": "o1"}),
    ("remember", lambda seen: {"text": "Ada prefers vim", "key": "note-1", "operation_id": "o2", "source": "chat"}),
    ("forget", lambda seen: {"entity": "ada", "attribute": "person/born", "operation_id": "o3",
                             "if_basis_tx": seen[-1]["basis_tx"]}),
    ("undo", lambda seen: {"tx": seen[0]["data"]["tx"], "operation_id": "o4", "if_basis_tx": seen[-1]["basis_tx"]}),
    ("remember", lambda seen: {"facts": [{"id": "carol", "person/name": "Carol", "person/knows": {"ref": "ada"}}],
                               "operation_id": "o5"}),
]


def ada_store(path: Path, *, unique_email: bool = False) -> Path:
    """The store an agent proposes to: Ada (by "me"), who knows grace; ``unique_email`` declares and
    writes a unique ``person/email`` too."""
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        ada = {"id": "ada", "person/name": "Ada Lovelace", "person/born": 1815}
        if unique_email:
            db.declare("person/email", type="text", unique=True)
            ada["person/email"] = "ada@x"
        db.transact(ada, by="me")
        db.transact({"id": "ada", "person/knows": {"ref": "grace"}})
    return path


def copy_of(store: Path, name: str) -> Path:
    """A physical copy of ``store`` beside it: the same history, byte for byte."""
    target = store.with_name(name)
    with fgraph.connect(str(store), read_only=True) as db:
        db.backup(str(target))
    return target


def tail(path: Path) -> list[str]:
    """The store's event lines, as ``fgraph tail --since 64`` prints them."""
    return run_cli("tail", "--since", "64", db=path, env=clean_env(), check=True).stdout.splitlines()


def agent(calls, reads=()):
    """An MCP session script: each call (its arguments from the answers so far, each call must succeed),
    then the reads; it returns (the calls' structured answers, the reads' structured answers)."""
    async def script(session):
        seen = []
        for name, arguments in calls:
            result = await session.call_tool(name, arguments(seen))
            assert not result.is_error, result.content[0].text
            seen.append(result.structured_content)
        return seen, [(await session.call_tool(name, arguments)).structured_content for name, arguments in reads]
    return script


def planning_copy(store: str, pending: list[dict]) -> fgraph.Db:
    """A store in memory holding ``store``'s events, then the pending proposals' events."""
    with fgraph.connect(store, read_only=True) as db:
        stream = "".join(line + "\n" for line in db.iter_events())
    copy = fgraph.connect(":memory:")
    copy.apply(io.StringIO(stream + "".join(r["event"] + "\n" for r in pending)))
    return copy


def propose(store: str, path: str, data, *, by: str = "agent", tool: str = "remember", session: str = "s1",
            client: str = "test-client", source: str | None = None, proposed_at: int = 1_700_000_000_000_000) -> dict:
    """Plan one write (``data`` as ``Db.transact`` takes it) and append its proposal; returns the record."""
    pending_file = ProposalFile(path)
    with pending_file.lock():
        pending = pending_file.records()
        with fgraph.connect(store, read_only=True) as db:
            basis = db.latest_tx()
        copy = planning_copy(store, pending)
        try:
            copy.transact(data, by=by, source=source)
            line = list(copy.iter_events())[-1]
        finally:
            copy.close()
        record = records.make_record(tool=tool, arguments={"data": data}, by=by, source=source, client=client,
                                     session=session, basis_tx=basis, proposed_at=proposed_at, event_line=line)
        if all(r["id"] != record["id"] for r in pending):
            pending_file.append(record)
    return record
