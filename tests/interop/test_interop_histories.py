"""Random CLI histories give the same bytes in this runtime and in the peer (issue 10).

Every generated step (``tests/support/histories.py``) goes to both CLIs, accepted or rejected:
each must end the same way (exit status, error name, and the same ``--json`` report
on success). After the history both files must give the same ``tail``, ``snapshot``
and core rows (01 §10). Then the same histories cross over: each runtime applies the
other's stream into a fresh file and restores the other's snapshot, and re-emits the
same bytes.

``FGRAPH_HISTORIES`` sets how many histories run (default 100); ``FGRAPH_HISTORY_SEED``
picks another fixed sample (default: hypothesis' derandomized one, the same on every
run). docs/conformance.md has the command that runs 2,000.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from tests.support.peerlib import peer_executable
from tests.support.corerows import core_rows
from tests.support.histories import histories
from tests.support.peerlib import published
from tests.support.runtimes import Runtime, our_executable

pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set"),
]

HISTORIES = int(os.environ.get("FGRAPH_HISTORIES", "100"))
SEED = os.environ.get("FGRAPH_HISTORY_SEED")
# Shrinking a failure costs minutes of CLI calls; FGRAPH_HISTORY_SHRINK=0 reports the raw example.
PHASES = [p for p in Phase if p != Phase.explain and (p != Phase.shrink or os.environ.get("FGRAPH_HISTORY_SHRINK") != "0")]


@pytest.fixture(scope="module")
def runtimes():
    ours, theirs = Runtime(our_executable(), "ours"), Runtime(peer_executable(), "peer")
    yield ours, theirs
    ours.close()
    theirs.close()


def step_args(step, latest: int, index: int) -> tuple[list[str], bytes | None]:
    kind = step[0]
    if kind == "add":
        return ["--json", "add", json.dumps(step[1], ensure_ascii=True)], None
    if kind == "batch":
        _, records, size, prefix = step
        args = ["--json", "add", "-", "--batch-size", str(size)]
        if prefix is not None:
            args += ["--operation-id-prefix", f"{prefix}{index}"]
        return args, "".join(json.dumps(r, ensure_ascii=True) + "\n" for r in records).encode()
    if kind == "stdin":
        _, data, size = step
        return ["--json", "add", "-"] + ([] if size is None else ["--batch-size", str(size)]), data
    if kind == "undo":
        return ["--json", "undo", str(step[1])], None
    if kind == "excise":
        return ["--json", "excise", step[1], "--operation-id", f"excise-{index}",
                "--if-basis-tx", str(latest)], None
    raise AssertionError(kind)


def comparable_report(kind: str, stdout: bytes):
    """The report as printed; excise's ``scrub`` member is our documented addition."""
    document = json.loads(stdout)
    if kind == "excise" and isinstance(document, dict):
        document.pop("scrub", None)
    return document


def latest_after(document, latest: int) -> int:
    reports = document if isinstance(document, list) else [document]
    for report in reports:
        if isinstance(report, dict) and report.get("status") == "applied":
            latest = max(latest, report["tx"])
    return latest


def replay(runtimes, base: Path, history) -> dict:
    ours, theirs = runtimes
    files = {"ours": base / "ours.fgraph", "peer": base / "peer.fgraph"}
    latest = 64
    log = []
    for index, step in enumerate(history):
        args, stdin = step_args(step, latest, index)
        mine = ours.run(files["ours"], *published(args), stdin=stdin)
        peers = theirs.run(files["peer"], *args, stdin=stdin)
        log.append((args[1:], peers.error_name or "ok"))
        context = f"step {index} {args} stdin={stdin!r}\nhistory so far: {log}"
        assert (mine.rc, mine.error_name) == (peers.rc, peers.error_name), \
            f"ours: {mine.stderr[:500]!r}\npeer: {peers.stderr[:500]!r}\n{context}"
        if mine.rc == 0:
            assert comparable_report(step[0], mine.stdout) == comparable_report(step[0], peers.stdout), \
                f"ours: {mine.stdout[:1500]!r}\npeer: {peers.stdout[:1500]!r}\n{context}"
            latest = latest_after(json.loads(mine.stdout), latest)
    return files


def check_history(runtimes, base: Path, history) -> None:
    """Every step, then tail, snapshot and core rows, then apply and restore across."""
    ours, theirs = runtimes
    files = replay(runtimes, base, history)
    if not files["ours"].exists() and not files["peer"].exists():
        return
    context = json.dumps(history, ensure_ascii=True, default=repr)[:4000]

    tails = {name: rt.run(files[name], "tail").stdout for name, rt in (("ours", ours), ("peer", theirs))}
    assert tails["ours"] == tails["peer"], context
    snapshots = {}
    for name, rt in (("ours", ours), ("peer", theirs)):
        result = rt.run(files[name], "snapshot")
        assert result.rc == 0, (name, result.stderr[:500], context)
        snapshots[name] = result.stdout
    assert snapshots["ours"] == snapshots["peer"], context
    assert core_rows(str(files["ours"])) == core_rows(str(files["peer"])), context

    # Cross over: each runtime applies the other's stream and restores the other's snapshot.
    # A stream with redacted stubs (after an excision) cannot be applied: both must refuse it alike.
    streams = {"ours": tails["peer"], "peer": tails["ours"]}
    snaps = {"ours": snapshots["peer"], "peer": snapshots["ours"]}
    applied = {}
    for name, rt in (("ours", ours), ("peer", theirs)):
        (base / f"for-{name}.ndjson").write_bytes(streams[name])
        (base / f"for-{name}.snapshot").write_bytes(snaps[name])
        received = base / f"{name}-applied.fgraph"
        applied[name] = rt.run(received, "--json", "apply", str(base / f"for-{name}.ndjson"))
        if applied[name].rc == 0:
            assert rt.run(received, "tail").stdout == streams[name], (name, context)
            again = json.loads(rt.run(received, "--json", "apply", str(base / f"for-{name}.ndjson")).stdout)
            assert again["applied"] == 0, (name, again, context)
        restored = base / f"{name}-restored.fgraph"
        result = rt.run(restored, "--json", "restore", str(base / f"for-{name}.snapshot"))
        assert result.rc == 0, (name, result.stderr[:500], context)
        assert rt.run(restored, "snapshot").stdout == snaps[name], (name, context)
        assert rt.run(restored, "tail").stdout == streams[name], (name, context)
    assert (applied["ours"].rc, applied["ours"].error_name) == (applied["peer"].rc, applied["peer"].error_name), \
        (applied["ours"].stderr[:300], applied["peer"].stderr[:300], context)
    if applied["ours"].rc == 0:
        assert json.loads(applied["ours"].stdout) == json.loads(applied["peer"].stdout), context


@settings(max_examples=HISTORIES, deadline=None, derandomize=SEED is None, database=None,
          phases=PHASES, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                HealthCheck.data_too_large])
@given(history=histories)
def test_random_histories_match_the_peer(runtimes, tmp_path_factory, history):
    check_history(runtimes, tmp_path_factory.mktemp("history"), history)


if SEED is not None:
    test_random_histories_match_the_peer = seed(int(SEED))(test_random_histories_match_the_peer)
