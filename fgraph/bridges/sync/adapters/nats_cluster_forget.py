"""How the NATS adapter makes a JetStream cluster forget an erased record on every node, raft logs
included (issue 47 item 3, docs/forgetting.md "The broker's own copies").

A message delete overwrites the record in the stream's block files on every node, but each node of
a replicated (R>1) stream also holds the record in the stream's raft log
(``$SYS/_js_/S-R3F-…/msgs/*.blk``) until its next raft snapshot compacts that log: on an idle
stream within about three minutes (nats-server's snapshot timer, 2 minutes plus up to 1), on a busy
one only once megabytes more have gone through it. A client cannot ask for that snapshot; what it
can do is take the stream to one replica — nats-server then deletes the stream's raft group, log
and all, on every node (an R1 stream has none) — delete the records there, and take it back to its
replica count: the new group starts from what the stream holds now. Sequences, durable consumers
and their positions are kept (the consumers follow the stream down and up).

The way down records the replica count to come back to in the stream's metadata
(``fgraph.replicas``), in the same update, and the way up removes it: a publisher killed in
between leaves a stream whose next ``erase`` (the next run of the same ``sync``) finishes the
cycle, and an operator sees the mark in ``nats stream info``. The report says what was done, or
what remains, for how long and the command that removes it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

MARK = "fgraph.replicas"        # stream metadata: the replica count an unfinished cycle comes back to
SETTLE_WAIT = 30.0              # seconds each half of the cycle may take to settle before it is reported as not done
POLL = 0.1
CALL_TIMEOUT = 5.0
IDLE_SNAPSHOT = "about three minutes once the stream is idle (each node's raft snapshot timer)"


def fix(stream: str, replicas: int) -> str:
    return (f"nats stream edit {stream} --replicas 1 -f, then nats stream edit {stream} --replicas {replicas} -f "
            "(or restart each node)")


class Refused(Exception):
    """The JetStream API answered a request with an error."""


@dataclass
class Plan:
    """One erase's pass over the stream's replication logs, between ``prepare`` and ``finish``."""

    stream: str
    replicas: int                 # the replica count the stream has, or comes back to
    group: str | None             # its raft group before (None: no replication log)
    down: bool = False            # it went to one replica and its raft group is gone
    problem: str | None = None    # why the logs could not be removed


async def _request(nc, subject: str, payload: dict | None = None) -> dict:
    reply = await nc.request(subject, json.dumps(payload).encode() if payload is not None else b"",
                             timeout=CALL_TIMEOUT)
    answer = json.loads(reply.data)
    if "error" in answer:
        error = answer["error"]
        raise Refused(f"{error.get('description', 'refused')} (code {error.get('err_code', error.get('code'))})")
    return answer


async def _info(nc, stream: str) -> dict:
    return await _request(nc, f"$JS.API.STREAM.INFO.{stream}")


async def _scale(nc, config: dict, replicas: int, mark: int | None) -> None:
    """Update the stream as it is configured now (the server's own JSON, so nothing it knows and
    nats-py does not is lost) with another replica count and the mark set or removed."""
    metadata = {key: value for key, value in (config.get("metadata") or {}).items() if key != MARK}
    if mark is not None:
        metadata[MARK] = str(mark)
    await _request(nc, f"$JS.API.STREAM.UPDATE.{config['name']}",
                   {**config, "num_replicas": replicas, "metadata": metadata})


async def _settled(nc, stream: str, done, wait: float) -> dict | None:
    """The stream's cluster info once ``done(cluster)`` holds, None after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        cluster = (await _info(nc, stream)).get("cluster") or {}
        if done(cluster):
            return cluster
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(POLL)


def _one_replica(cluster: dict) -> bool:
    return not cluster.get("raft_group") and not cluster.get("replicas") and "desired" not in cluster


def _owed(config: dict) -> int | None:
    mark = (config.get("metadata") or {}).get(MARK, "")
    return int(mark) if mark.isdigit() and int(mark) > 1 else None


async def prepare(nc, stream: str, deleting: bool, wait: float = SETTLE_WAIT) -> Plan:
    """Before the records are deleted: take a replicated stream to one replica (when there is
    something to delete, or an earlier cycle is unfinished), so that no raft log is left to keep them."""
    info = await _info(nc, stream)
    config, cluster = info["config"], info.get("cluster") or {}
    owed = _owed(config)
    plan = Plan(stream, owed or int(config.get("num_replicas") or 1), cluster.get("raft_group"))
    if plan.replicas <= 1 or not (deleting or owed):
        return plan
    if owed is None:
        peers = cluster.get("replicas") or []
        behind = [peer.get("name", "?") for peer in peers if not peer.get("current") or peer.get("offline")]
        if plan.group is None or behind or len(peers) != plan.replicas - 1:
            plan.problem = (f"not every replica is current ({', '.join(behind) or 'some are missing'}), so the "
                            "stream was not taken to one replica")
            return plan
        try:
            await _scale(nc, config, 1, plan.replicas)
        except Refused as exc:
            plan.problem = f"the server refused to change the stream's replicas: {exc}"
            return plan
        except asyncio.TimeoutError:   # no answer: a user without the right to edit streams gets none
            plan.problem = "the server did not answer the request to change the stream's replicas"
            return plan
    plan.down = await _settled(nc, stream, _one_replica, wait) is not None
    if not plan.down:
        plan.problem = f"the stream did not settle at one replica within {wait:g} s"
    return plan


async def finish(nc, plan: Plan, wait: float = SETTLE_WAIT) -> dict:
    """After the delete: bring the stream back to its replica count and report on its logs.
    Raises ``Refused`` when the stream stays at one replica (the next run finishes the cycle)."""
    if plan.group is None and plan.replicas <= 1:
        return {"status": "erased", "replication_logs": "none",
                "detail": f"stream {plan.stream} has one replica, so no raft log holds its records; "
                          "the delete overwrote them in its files"}
    info = await _info(nc, plan.stream)
    if _owed(info["config"]) is not None:   # also after a timed-out way down that the server did carry out
        await _scale(nc, info["config"], plan.replicas, None)
    if plan.down:
        back = await _settled(nc, plan.stream, lambda c: len(c.get("replicas") or []) == plan.replicas - 1
                              and all(p.get("current") for p in c["replicas"]) and "desired" not in c, wait)
        current = "" if back else f"; its replicas were still catching up after {wait:g} s"
        return {"status": "erased", "replication_logs": f"removed on {plan.replicas} of {plan.replicas} nodes",
                "detail": f"stream {plan.stream} went to one replica (raft group {plan.group} deleted on every "
                          f"node) and back to {plan.replicas}{current}"}
    if plan.problem is None:   # nothing was deleted and no cycle was owed
        return {"status": "erased", "replication_logs": "untouched", "detail": "the stream held none of the records"}
    return {"status": "remains", "replication_logs": f"kept on {plan.replicas} nodes",
            "detail": f"{plan.problem}; the raft logs of stream {plan.stream} still hold the deleted records",
            "until": IDLE_SNAPSHOT, "fix": fix(plan.stream, plan.replicas)}
