"""kill -9 of `fgraph proposals accept|reject` at random points (issue 51 item 3, docs/proposals.md
P6): after every cycle the store, the pending file and the audit agree. 30 cycles in
`make test`, 60 under FGRAPH_TORTURE=full (tests/support/torture.py).

A cycle: a few proposals are made, a decision (accept all, accept a prefix and reject the rest,
or reject all) is started and killed, either at a random moment of its run or a random few
milliseconds after its intent file appears (the window where the store, the pending file and the
audit are written). Right after the kill every proposal is still pending, or in the audit, or in
the intent, and the pending file reads whole; after the next `proposals list` (which finishes an
interrupted decision) every proposal made so far is exactly one of: pending (its event not in the
store), accepted (in the audit and its event in the store), rejected (in the audit only)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter

import fgraph
from fgraph.bridges.proposals import decide
from fgraph.bridges.proposals.pending import ProposalFile
from tests.support.cli import clean_env, invoke_cli
from tests.support.proposals import propose
from tests.support.torture import FGRAPH, report, rng, size, wait_for


def _events(store) -> set[str]:
    with fgraph.connect(store, read_only=True) as db:
        return {json.loads(line)["event"] for line in db.iter_events()}


def _audit(pending) -> tuple[dict, dict]:
    accepted, rejected = {}, {}
    try:
        with open(pending + decide.AUDIT_SUFFIX, "rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    continue   # a torn last line right after a kill: the next command cuts it back
                decision = json.loads(line)
                for record in decision["accepted"]:
                    assert record["id"] not in accepted and record["id"] not in rejected
                    accepted[record["id"]] = record
                for record in decision["rejected"]:
                    assert record["id"] not in accepted and record["id"] not in rejected
                    rejected[record["id"]] = record
    except FileNotFoundError:
        pass
    return accepted, rejected


def _check_right_after_kill(store, pending, made: dict) -> None:
    waiting = {r["id"] for r in ProposalFile(pending).records()}       # reads whole: no torn line
    accepted, rejected = _audit(pending)
    intent = {}
    if os.path.exists(decide.intent_path(pending)):
        with open(decide.intent_path(pending), "rb") as handle:
            held = json.loads(handle.read())["decision"]
        intent = {r["id"]: r for r in held["accepted"] + held["rejected"]}
    in_store = _events(store)
    for pid, record in made.items():
        assert pid in waiting or pid in accepted or pid in rejected or pid in intent, pid
        event = json.loads(record["event"])["event"]
        if event in in_store:
            assert pid in accepted or pid in intent, pid


def _check_agreed(store, pending, made: dict) -> Counter:
    assert not os.path.exists(decide.intent_path(pending))
    waiting = {r["id"] for r in ProposalFile(pending).records()}
    accepted, rejected = _audit(pending)
    in_store = _events(store)
    counts: Counter = Counter()
    for pid, record in made.items():
        event = json.loads(record["event"])["event"]
        states = [pid in waiting, pid in accepted, pid in rejected]
        assert sum(states) == 1, (pid, states)
        assert (event in in_store) == (pid in accepted), pid
        counts[("pending", "accepted", "rejected")[states.index(True)]] += 1
    return counts


def test_kill_9_of_a_decision_at_random_points_leaves_everything_agreeing(tmp_path):
    cycles = size(30, 60)   # the issue asks for at least 30; a cycle costs well under a second
    rnd = rng("proposals-kill")
    store, pending = str(tmp_path / "s.db"), str(tmp_path / "p.ndjson")
    with fgraph.connect(store) as db:
        db.transact({"id": "root", "t/n": 0})
    env = clean_env()
    made: dict[str, dict] = {}
    where: Counter = Counter()
    duration = 0.5
    for cycle in range(cycles):
        for k in range(rnd.randint(2, 6)):
            record = propose(store, pending, {"id": f"e{cycle}-{k}", "t/n": k}, proposed_at=cycle * 100 + k)
            made[record["id"]] = record
        code, listed, err = invoke_cli(["--db", store, "--json", "proposals", "list", pending])
        assert code == 0, err
        rows = [r["id"] for r in json.loads(listed)["proposals"]]
        kind = rnd.choice(("accept", "prefix", "reject"))
        if kind == "reject":
            args = ["reject", pending, "--all"]
        else:
            chosen = rows if kind == "accept" else rows[: rnd.randint(1, len(rows))]
            digest = decide.stream_digest([made[i] for i in chosen])
            args = ["accept", pending, *chosen, "--expect-digest", digest]
        started = time.monotonic()
        proc = subprocess.Popen([FGRAPH, "--db", store, "proposals", *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            if rnd.random() < 0.5:
                wait_for(lambda: proc.poll() is not None or os.path.exists(decide.intent_path(pending)),
                         timeout=60, step=0.0005)
                time.sleep(rnd.uniform(0, 0.03))
            else:
                wait_for(lambda: proc.poll() is not None, timeout=rnd.uniform(0, duration * 1.2), step=0.002)
            finished = proc.poll() is not None
            if not finished:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            err = proc.stderr.read().decode()
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stderr.close()
        if finished:
            assert proc.returncode == 0, err
            duration = max(0.05, (duration + time.monotonic() - started) / 2)
        where["finished" if finished else
              "killed with intent" if os.path.exists(decide.intent_path(pending)) else "killed"] += 1
        _check_right_after_kill(store, pending, made)
        code, listed, err = invoke_cli(["--db", store, "--json", "proposals", "list", pending])
        assert code == 0, err
        states = _check_agreed(store, pending, made)
    counts = Counter({**where, **states, "lost": 0, "partial": 0, "tracebacks": 0, "hangs": 0})
    report("proposals-kill", counts, cycles=cycles)
    assert where["killed with intent"] + where["killed"] > 0
