"""Proves our writes are exact: the upstream scenario reproduces format-v2.core byte for byte,
and random transaction sequences give the same core rows in our runtime and in the peer."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings

import fgraph
from fgraph.core.canonical import loads
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED
from tests.support.paths import UPSTREAM, requires_upstream
from tests.support.peerlib import peer_executable
from tests.support.corerows import core_rows
from tests.support.runtimes import Runtime
from tests.support.strategies import SCHEMA, risky_histories


def replay(path, transactions) -> list:
    """One connect per transaction, like one CLI call per line; returns the error names (or None)."""
    outcomes = []
    for data in transactions:
        db = fgraph.connect(str(path))
        try:
            db.transact(data)
            outcomes.append(None)
        except fgraph.FgraphError as exc:
            outcomes.append(exc.name)
        finally:
            db.close()
    return outcomes


@requires_upstream()
def test_crosscheck_reproduces_upstream_core_rows(tmp_path, deterministic):
    lines = [loads(line) for line in (UPSTREAM / "crosscheck.ndjson").read_text().splitlines() if line.strip()]
    path = tmp_path / "fx.db"
    assert replay(path, lines) == [None] * len(lines)
    assert core_rows(str(path)) == (UPSTREAM / "fixtures" / "format-v2.core").read_text()


@requires_upstream()
def test_genesis_rows_equal_upstream_prefix(tmp_path, deterministic):
    path = tmp_path / "g.db"
    fgraph.connect(str(path)).close()
    ours = core_rows(str(path)).splitlines()
    upstream = (UPSTREAM / "fixtures" / "format-v2.core").read_text().splitlines()
    genesis = [row for row in upstream if row.startswith(("id|", "event|64|", "fact|"))
               and (not row.startswith("id|") or int(row.split("|")[1]) <= 64)
               and (not row.startswith("fact|") or int(row.split("|")[1]) <= 39)]
    assert [row for row in ours if row.startswith(("id|", "event|", "fact|"))] == genesis


def run_peer(runtime, path, transactions) -> list:
    """Every transaction, rejected ones included, as its own `add` call; the error names (or None)."""
    outcomes = []
    for data in transactions:
        # json.dumps keeps 0.0 a float, and ASCII escapes keep U+2028 from splitting lines upstream.
        outcome = runtime.run(path, "--json", "add", "-", stdin=(json.dumps(data) + "\n").encode())
        if outcome.rc not in (0, 1) or (outcome.rc == 1 and not outcome.error_name):
            raise AssertionError(f"the peer crashed on {json.dumps(data)[:300]}: {outcome.stderr[-2000:]!r}")
        outcomes.append(outcome.error_name or None)
    return outcomes


@pytest.fixture(scope="module")
def peer_runtime():
    if peer_executable() is None:
        pytest.skip("FGRAPH_PEER is not set")
    runtime = Runtime(peer_executable(), "peer")
    yield runtime
    runtime.close()


@pytest.mark.peer
@settings(max_examples=int(os.environ.get("FGRAPH_EXAMPLES", "12")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=risky_histories)
def test_random_histories_match_peer_core_rows(tmp_path_factory, peer_runtime, history):
    base = tmp_path_factory.mktemp("h")
    ours, theirs = base / "ours.db", base / "theirs.db"
    env = {"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": CONFORMANCE_SEED}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        outcomes = replay(ours, [SCHEMA] + history)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    theirs_outcomes = run_peer(peer_runtime, theirs, [SCHEMA] + history)
    assert outcomes == theirs_outcomes, json.dumps(list(zip(outcomes, theirs_outcomes, [SCHEMA] + history)))[:3000]
    assert core_rows(str(ours)) == core_rows(str(theirs)), json.dumps(history)
