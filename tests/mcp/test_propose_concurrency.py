"""Two proposing servers and a person deciding, all at once (issue 51, "Tests and evidence"): at
least 200 interleaved operations through the SDK's stdio client and ``fgraph proposals``; no torn
or lost line, every proposal accepted or rejected exactly once, and the store holds exactly the
accepted events. ``make test`` runs 2 x 100 proposals; FGRAPH_TORTURE=full 2 x 500."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import Implementation

import fgraph
from fgraph.bridges.proposals import decide as decisions
from fgraph.bridges.proposals.pending import ProposalFile
from fgraph.core.errors import Conflict
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.mcp import OURS, server_env
from tests.support.proposals import tail
from tests.support.torture import rng, size

DEADLINE = 600.0   # seconds the whole run may take on a loaded machine before it counts as a hang


def person(store: Path, proposals: Path, done: threading.Event, log: list, failures: list) -> None:
    """Decide while the agents propose, through the library ``fgraph proposals`` calls: list, take a
    short prefix of what is pending, accept or reject it (a reject refused because later proposals
    were planned on it becomes an accept); after the agents stop, decide everything left."""
    chooser = rng("propose-concurrency")
    deadline = time.monotonic() + DEADLINE
    path = str(proposals)
    try:
        with fgraph.connect(str(store)) as db:
            while time.monotonic() < deadline:
                finished = done.is_set()
                pending = [p["id"] for p in decisions.listing(db, path)["proposals"]]
                if not pending:
                    if finished:
                        return
                    time.sleep(0.005)   # poll for the agents' next proposals
                    continue
                chosen = pending if finished else pending[:chooser.randint(1, min(8, len(pending)))]
                digest = decisions.listing(db, path, chosen)["digest"]
                if not finished and chooser.random() < 0.5:
                    try:
                        log.append(("rejected", decisions.decide(db, path, chosen, accept=False, by="person")["rejected"]))
                        continue
                    except Conflict as exc:
                        assert "planned on the ones rejected" in str(exc), exc
                result = decisions.decide(db, path, chosen, accept=True, expect_digest=digest, by="person")
                assert not result["conflicts"], result
                log.append(("accepted", result["accepted"]))
        failures.append("the person did not finish before the deadline")
    except BaseException as exc:   # noqa: BLE001 - reported by the test
        failures.append(repr(exc))


async def agent(store: Path, proposals: Path, tag: str, count: int, answers: list) -> None:
    # random event UUIDs: the seeded ones are a function of the transaction id, which a decision
    # reuses (a proposal accepted after a rejected one lands at another id than it was planned at)
    env = {k: v for k, v in server_env().items() if k != "FGRAPH_EVENT_SEED"}
    params = StdioServerParameters(command=OURS, args=["--db", str(store), "mcp", "--propose", str(proposals)],
                                   env=env)
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            async with ClientSession(read, write, client_info=Implementation(name=tag, version="1")) as session:
                await session.initialize()
                for i in range(count):
                    # every fifth call replaces the one value both agents write: planned on the other's proposals
                    facts = {"id": "shared" if i % 5 == 4 else f"{tag}-{i}", "item/n": i, "item/by": tag}
                    result = await session.call_tool("remember", {"facts": facts, "operation_id": f"{tag}-{i}"})
                    assert not result.is_error, result.content[0].text
                    answers.append(result.structured_content["data"])
                    if i % 10 == 9:
                        read_back = await session.call_tool("about", {"entity": f"{tag}-{i - 5}"})
                        assert read_back.is_error or "pending" in read_back.structured_content


def test_two_proposing_servers_and_a_deciding_person_at_once(tmp_path):
    count = size(100, 500)
    store, proposals = tmp_path / "m.db", tmp_path / "p.ndjson"
    with fgraph.connect(str(store), clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "seed", "item/n": 0, "item/by": "setup"})
    before = tail(store)
    done, log, failures, answers = threading.Event(), [], [], {"a": [], "b": []}
    deciding = threading.Thread(target=person, args=(store, proposals, done, log, failures))
    deciding.start()

    async def agents():
        async with anyio.create_task_group() as group:
            for tag in answers:
                group.start_soon(agent, store, proposals, tag, count, answers[tag])
    try:
        anyio.run(agents)
    finally:
        done.set()
        deciding.join(DEADLINE)
    assert not deciding.is_alive() and not failures, failures

    proposed = [a["proposal"] for tag in answers for a in answers[tag]]
    assert all(a["status"] == "proposed" for tag in answers for a in answers[tag])
    assert len(proposed) == 2 * count and len(set(proposed)) == 2 * count
    # no torn or lost line: the pending file is empty, the audit holds whole records only
    assert ProposalFile(str(proposals)).records() == []
    audit = [json.loads(line) for line in Path(f"{proposals}.decided.ndjson").read_bytes().splitlines()]
    decided = Counter(r["id"] for d in audit for r in d["accepted"] + d["rejected"])
    assert set(decided) == set(proposed) and set(decided.values()) == {1}     # each exactly once
    assert [ids for _, ids in log] == [[r["id"] for r in d["accepted"] + d["rejected"]] for d in audit]
    accepted = [r["event"] for d in audit for r in d["accepted"]]
    assert tail(store) == before + accepted                                   # exactly the accepted events
    assert {kind for kind, _ in log} == {"accepted", "rejected"}
    with fgraph.connect(str(store), read_only=True) as db:   # the last accepted value of the shared entity
        values = [fact[2] for event in accepted for fact in json.loads(event)["asserted"]
                  if fact[:2] == ["shared", "item/n"]]
        assert values and db.entity("shared").get("item/n") == values[-1]
