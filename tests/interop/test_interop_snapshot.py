"""Cross-runtime snapshot/1 checks (spec 05, 11 §4 items 2 and 4 for snapshots).

Every test here needs the published runtime's CLI in ``FGRAPH_PEER`` (e.g.
``../shared/tools/refpeer``); without it the whole module is skipped.

For random histories (``tests/support/strategies.py``), optionally with one attribute declared
nohistory first and with an undo of one of the committed transactions at the end, built
in this runtime through its library (one connection per transaction, like one CLI call
per transaction) and in the peer through its CLI (``add -``, then ``undo TX``), all with
the deterministic environment of 11 §2.3:

- both runtimes' snapshots of the same history are byte-identical (ours through the
  library and through our CLI);
- the peer's snapshot restores in ours (``restore``), which returns the peer CLI's
  ``{"basis_tx", "ok"}`` and re-snapshots byte-identically, with the same ``tail``;
- ours restores in the peer (``restore FILE``), which prints the same result and
  re-snapshots byte-identically.

A fixed scenario adds what the strategies do not produce: a vector attribute (nohistory
by default, 07 §1) replaced and undone, a nohistory attribute turned back to history,
anonymous entities and a ref to a transaction.

``FGRAPH_EXAMPLES`` sets the number of random histories (default 8); each costs about
seven peer CLI calls.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import fgraph
from tests.support.peerlib import peer_executable
from tests.support.strategies import ATTRS, SCHEMA, risky_histories as histories

pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set"),
]

EXAMPLES = int(os.environ.get("FGRAPH_EXAMPLES", "8"))


from tests.support.peerlib import ENV, CliError, deterministic_env, ndjson, our_executable, peer, peer_json, peer_replay, run_cli  # noqa: E402, F401 - after the constants the peer helpers read


def ours(path: Path, fn, *, read_only: bool = False):
    with deterministic_env():
        db = fgraph.connect(str(path), read_only=read_only)
        try:
            return fn(db)
        finally:
            db.close()


def our_snapshot(path: Path) -> bytes:
    return ours(path, lambda db: db.snapshot(), read_only=True).encode("utf-8")


def our_tail(path: Path) -> bytes:
    return ours(path, lambda db: "".join(line + "\n" for line in db.iter_events(64)),
                read_only=True).encode("utf-8")


def lines_of(stream: bytes) -> list[bytes]:
    """LF-only splitting (never splitlines: U+2028 may sit inside a line)."""
    assert stream.endswith(b"\n")
    return stream.split(b"\n")[:-1]


# ---- building the same history in both runtimes


def build_both(base: Path, transactions: list, undo_pick: int | None) -> tuple[Path, Path, str]:
    """Replay ``transactions`` in ours (skipping those that fail) and the committed ones in the
    peer, then undo the ``undo_pick``-th applied transaction in both. Returns both paths and a
    description of the scenario for assertion messages."""
    mine, theirs = base / "ours.fgraph", base / "theirs.fgraph"
    committed, applied, outcomes = [], [], []
    for data in transactions:
        try:
            report = ours(mine, lambda db, data=data: db.transact(data))
        except fgraph.FgraphError as exc:
            outcomes.append(exc.name)
            continue
        outcomes.append(None)
        committed.append(data)
        if report["status"] == "applied":
            applied.append(report["tx"])
    peer_replay(theirs, transactions, outcomes)
    scenario = {"committed": committed}
    if undo_pick is not None and applied:
        target = applied[undo_pick % len(applied)]
        scenario["undo"] = target
        try:
            report = ours(mine, lambda db: db.undo(target))
        except fgraph.FgraphError as exc:  # e.g. a re-assertion that breaks uniqueness
            with pytest.raises(CliError) as error:
                peer(theirs, "undo", str(target))
            assert error.value.name == exc.name, scenario
            scenario["undo_error"] = exc.name
        else:
            assert peer_json(theirs, "undo", str(target))["tx"] == report["tx"], scenario
    return mine, theirs, json.dumps(scenario, ensure_ascii=True)


def check_snapshots(base: Path, mine: Path, theirs: Path, context: str) -> None:
    # 11 §4 item 2 for snapshots: both writers, the same bytes
    snapshot = peer(theirs, "snapshot")
    assert our_snapshot(mine) == snapshot, context
    assert run_cli(our_executable(), mine, "snapshot") == snapshot, context
    lines = lines_of(snapshot)
    footer = json.loads(lines[-1])
    assert footer["fgraph"] == "end" and footer["receipts"] + footer["facts"] + 2 == len(lines), context

    # item 4, peer -> ours: restore the peer's snapshot, re-snapshot byte-identically
    restored_here = base / "ours-restored.fgraph"
    result = ours(restored_here, lambda db: db.restore(snapshot.decode("utf-8"), details=True))
    assert our_snapshot(restored_here) == snapshot, context
    assert our_tail(restored_here) == peer(theirs, "tail"), context

    # item 4, ours -> peer: the peer restores our snapshot (restore FILE) and re-snapshots it
    snapshot_file = base / "ours.snapshot.ndjson"
    snapshot_file.write_bytes(our_snapshot(mine))
    restored_there = base / "theirs-restored.fgraph"
    printed = peer_json(restored_there, "restore", str(snapshot_file))
    assert peer(restored_there, "snapshot") == snapshot, context
    # the published library returns None; ours returns what both CLIs print
    assert result == printed == {"basis_tx": printed["basis_tx"], "ok": True}, (result, printed, context)
    assert printed["basis_tx"] == ours(mine, lambda db: db.latest_tx(), read_only=True), context


# ---- random histories


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=histories, nohistory=st.sampled_from([None, *ATTRS]),
       undo_pick=st.one_of(st.none(), st.integers(min_value=0, max_value=20)))
@example(history=[{"id": "ada", "p/name": "Ada", "p/age": 36}, {"id": "ada", "p/name": "Ada L."},
                  ["retract", "ada", "p/name"], {"id": "bob", "p/name": "x" * 300}],
         nohistory="p/name", undo_pick=1)
@example(history=[{"id": "ada", "p/tags": "red", "p/email": "a@x"}, ["retract", "ada"],
                  {"id": "bob", "p/email": "a@x", "p/friend": {"ref": "ada"}}],
         nohistory="p/tags", undo_pick=1)
def test_snapshots_cross_runtime(tmp_path_factory, history, nohistory, undo_pick):
    base = tmp_path_factory.mktemp("snapshots")
    prefix = [SCHEMA] + ([{"id": nohistory, "fgraph/nohistory": True}] if nohistory else [])
    mine, theirs, context = build_both(base, prefix + history, undo_pick)
    check_snapshots(base, mine, theirs, context)


# ---- a fixed scenario: vectors, nohistory on and off, undo, anonymous entities, tx refs


def test_snapshots_cross_runtime_vectors_nohistory_undo(tmp_path):
    history = [
        {"id": "v/emb", "fgraph/type": "vector", "fgraph/dims": 2},
        {"id": "k/n", "fgraph/nohistory": True},
        {"id": "m", "v/emb": {"vector": [1, 0]}, "k/n": 1, "k/long": "é" * 200},
        {"id": "m", "v/emb": {"vector": [0, 1]}, "k/n": 2},  # both old rows are deleted
        [{"k/anon": "one"}, {"id": {"tmp": "t"}, "k/anon": "two"}, {"id": "m", "k/peer": {"ref": {"tmp": "t"}}}],
        {"id": "k/n", "fgraph/nohistory": False},
        {"id": "m", "k/n": 3, "k/about": {"ref": 68}},
        {"id": "m", "k/n": 4},
    ]
    mine, theirs, context = build_both(tmp_path, history, undo_pick=3)  # undo the vector replacement
    assert json.loads(context)["undo"] == 72, context
    assert ours(mine, lambda db: db.entity("m"), read_only=True).get("v/emb") is None  # 07 §1
    check_snapshots(tmp_path, mine, theirs, context)
