"""Cross-runtime event/1 stream checks (spec 11 §4 items 3, 5, 6, 7 for streams; 11 §5).

Every test here needs the published runtime's CLI in ``FGRAPH_PEER`` (e.g.
``../shared/tools/refpeer``); without it the whole module is skipped.

For random histories (``tests/support/strategies.py``) built in the peer through its CLI
and in this runtime through its library (one connection per transaction, like one
CLI call per transaction):

- item 3 (streams): the peer's ``tail`` equals ours byte for byte;
- item 5: each runtime applies the other's stream into a fresh file and re-emits
  identical bytes (``--since`` the last local tx before apply: genesis, 64), and
  both print the same summary;
- item 6: re-applying returns ``already_applied`` for every event and the same basis;
- item 7: a stream whose third line is corrupted rolls back entirely on both (the
  receiver keeps only genesis: ``transactions == 1``), with the same error name.

Plus the portable boundaries (11 §5): ``invalid_json`` through ``add`` on both
CLIs, and ``unicode_value`` through events -> apply (ours->ours, ours->peer,
peer->ours); and decision 3 (names that already exist on the receiver) with a
peer-written stream.

``FGRAPH_EXAMPLES`` sets the number of random histories (default 10); each costs
about eight peer CLI calls.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fgraph
from tests.support.paths import UPSTREAM
from tests.support.peerlib import peer_executable
from tests.support.strategies import SCHEMA, risky_histories as histories

pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set"),
]

BOUNDARIES = UPSTREAM / "portable-boundaries.json"
EXAMPLES = int(os.environ.get("FGRAPH_EXAMPLES", "10"))


from tests.support.peerlib import ENV, CliError, deterministic_env, ndjson, our_executable, peer, peer_json, peer_replay, run_cli  # noqa: E402, F401 - after the constants the peer helpers read


def our_replay(path: Path, transactions: list) -> tuple[list, int]:
    """One connect per transaction; returns the transactions that did not fail and
    how many of them wrote a transaction (a no-op writes no event)."""
    committed, events, outcomes = [], 0, []
    with deterministic_env():
        for data in transactions:
            db = fgraph.connect(str(path))
            try:
                report = db.transact(data)
                committed.append(data)
                events += report["status"] != "noop"
                outcomes.append(None)
            except fgraph.FgraphError as exc:
                outcomes.append(exc.name)
            finally:
                db.close()
    our_replay.outcomes = outcomes
    return committed, events


def our_tail(path: Path, since: int = 64) -> bytes:
    db = fgraph.connect(str(path), read_only=True)
    try:
        return b"".join(line.encode("utf-8") + b"\n" for line in db.iter_events(since))
    finally:
        db.close()


def our_apply(path: Path, stream: bytes) -> dict:
    """apply_summary into ``path``; raises CliError-like names for typed errors."""
    with deterministic_env():
        db = fgraph.connect(str(path))
        try:
            return dict(db.apply_summary(stream))
        except fgraph.FgraphError as exc:
            raise CliError(exc.name, str(exc)) from exc
        finally:
            db.close()


def our_stats(path: Path) -> dict:
    db = fgraph.connect(str(path), read_only=True)
    try:
        return db.stats()
    finally:
        db.close()


def our_entity(path: Path, ref) -> dict:
    db = fgraph.connect(str(path), read_only=True)
    try:
        return db.entity(ref)
    finally:
        db.close()


def lines_of(stream: bytes) -> list[bytes]:
    """LF-only splitting (never splitlines: U+2028 may sit inside a line)."""
    assert stream.endswith(b"\n") or not stream
    return stream.split(b"\n")[:-1] if stream else []


def corrupt(line: bytes, kind: str) -> bytes:
    if kind == "truncated":
        return line[: len(line) // 2]
    record = json.loads(line)
    if kind == "unknown_field":
        record["zz_unknown"] = 1
    elif kind == "wrong_version":
        record["fgraph"] = "event/2"
    else:  # pragma: no cover
        raise ValueError(kind)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def third_line_corrupted(stream: bytes, kind: str) -> bytes:
    lines = lines_of(stream)
    assert lines, "a stream of at least one event"
    while len(lines) < 3:  # repeat the first events: a repeat in one call is already_applied
        lines.append(lines[len(lines) % len(lines)])
    lines = lines[:2] + [corrupt(lines[2], kind)] + lines[3:]
    return b"".join(line + b"\n" for line in lines)


def expected_reapply(first: dict) -> dict:
    return {"already_applied": first["events"], "applied": 0, "basis_tx": first["basis_tx"],
            "events": first["events"], "noop": 0}


# ---- random histories: 11 §4 items 3, 5, 6, 7


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, kind=st.sampled_from(["truncated", "unknown_field", "wrong_version"]))
def test_streams_cross_runtime(tmp_path_factory, history, kind):
    base = tmp_path_factory.mktemp("streams")
    ours, theirs = base / "ours.fgraph", base / "theirs.fgraph"
    committed, events = our_replay(ours, [SCHEMA] + history)
    peer_replay(theirs, [SCHEMA] + history, our_replay.outcomes)
    context = json.dumps(committed, ensure_ascii=True)

    # item 3: both writers emit the same stream
    stream = peer(theirs, "tail")
    assert our_tail(ours) == stream, context
    assert len(lines_of(stream)) == events, context

    # item 5 + 6, peer -> ours: apply into a fresh file, re-tail, re-apply
    ours_rx = base / "ours-rx.fgraph"
    first_ours = our_apply(ours_rx, stream)
    assert first_ours["applied"] == first_ours["events"] == events, (first_ours, context)
    assert our_tail(ours_rx, 64) == stream, context
    assert our_apply(ours_rx, stream) == expected_reapply(first_ours), context

    # item 5 + 6, ours -> peer
    theirs_rx = base / "theirs-rx.fgraph"
    stream_file = base / "ours.ndjson"
    stream_file.write_bytes(our_tail(ours))
    first_peer = peer_json(theirs_rx, "apply", str(stream_file))
    assert first_peer == first_ours, context  # same stream, same fresh receiver: same summary
    assert peer(theirs_rx, "tail", "--since", "64") == stream, context
    assert peer_json(theirs_rx, "apply", str(stream_file)) == expected_reapply(first_peer), context

    # item 7: a corrupted third line rolls back the whole apply on both
    bad = third_line_corrupted(stream, kind)
    bad_file = base / "bad.ndjson"
    bad_file.write_bytes(bad)
    with pytest.raises(CliError) as peer_error:
        peer(base / "theirs-bad.fgraph", "apply", str(bad_file))
    assert peer_json(base / "theirs-bad.fgraph", "info")["transactions"] == 1, context
    with pytest.raises(CliError) as our_error:
        our_apply(base / "ours-bad.fgraph", bad)
    assert our_stats(base / "ours-bad.fgraph")["transactions"] == 1, context
    assert our_error.value.name == peer_error.value.name == "TypeError", (kind, context)


# ---- a fixed scenario: since = the last local tx before apply, our CLI's bytes


def test_apply_after_local_writes_since_last_local_tx(tmp_path):
    """11 §4 item 5 on a receiver that already has its own transactions (under another
    seed, so its event UUIDs cannot collide with the source's): the stream re-emits
    byte-identically after the receiver's last local tx, on both runtimes, through
    both CLIs."""
    source = tmp_path / "source.fgraph"
    history = [SCHEMA, {"id": "ada", "p/name": "Ada", "p/tags": ["red", "blue"]},
               {"id": "bob", "p/friend": {"ref": "ada"}, "p/data": {"json": {"b": [1.5, None]}}},
               ["retract", "ada", "p/tags", "red"], {"id": "ada", "p/name": "Ada\u2028L."}]
    peer(source, "add", "-", stdin=ndjson(history))
    stream = peer(source, "tail")
    stream_file = tmp_path / "stream.ndjson"
    stream_file.write_bytes(stream)
    local = json.dumps({"id": "receiver", "r/local": 1})
    summaries = {}
    for name, executable in (("ours", our_executable()), ("peer", peer_executable())):
        receiver = tmp_path / f"{name}-rx.fgraph"
        # another seed for the receiver's own write: its event UUID cannot collide with the source's
        last_local = json.loads(run_cli(executable, receiver, "--json", "add", local,
                                        seed="receiver-local-seed"))["tx"]
        assert last_local > 64
        summaries[name] = json.loads(run_cli(executable, receiver, "--json", "apply", str(stream_file)))
        assert summaries[name]["applied"] == len(history), (name, summaries[name])
        assert run_cli(executable, receiver, "tail", "--since", str(last_local)) == stream, name
        everything = lines_of(run_cli(executable, receiver, "tail"))
        assert len(everything) == len(history) + 1, name  # the local event comes first
        again = json.loads(run_cli(executable, receiver, "--json", "apply", str(stream_file)))
        assert again == expected_reapply(summaries[name]), name
    assert summaries["ours"] == summaries["peer"]


# ---- decision 3: names that already exist on the receiver


def test_existing_names_unify_and_snapshot_restores(tmp_path):
    """Spec README decision 3: a peer-written stream whose created names already exist
    on our receiver applies (reusing the local identities), re-emits identical bytes,
    and the receiver's snapshot restores in this runtime (the published runtime's
    does not: 04 §5.6 item 2)."""
    source = tmp_path / "source.fgraph"
    history = [[{"id": "ada", "p/name": "Ada"}, {"id": {"tmp": "t"}, "p/score": 1.5},
                {"id": "bob", "p/friend": {"ref": {"tmp": "t"}}}],
               [{"p/name": "anonymous after existing names"}]]
    peer(source, "add", "-", stdin=ndjson(history))
    stream = peer(source, "tail")
    receiver = tmp_path / "rx.fgraph"
    # the receiver's own writes use another seed: only the names collide, not event UUIDs
    with deterministic_env(FGRAPH_EVENT_SEED="receiver-local-seed"):
        db = fgraph.connect(str(receiver))
        last_local = db.transact([{"id": "ada", "p/name": "Local"}, {"id": "bob", "p/other": 1}])["tx"]
        db.close()
    summary = our_apply(receiver, stream)
    assert summary["applied"] == 2, summary
    assert our_tail(receiver, last_local) == stream
    assert our_apply(receiver, stream) == expected_reapply(summary)
    assert our_entity(receiver, "ada") == {"p/name": "Ada"}
    db = fgraph.connect(str(receiver), read_only=True)
    try:
        snapshot = db.snapshot()
    finally:
        db.close()
    restored = tmp_path / "restored.fgraph"
    with deterministic_env():
        db = fgraph.connect(str(restored))
        try:
            db.restore(snapshot)
        finally:
            db.close()
    assert our_tail(restored, 64) == our_tail(receiver, 64)
    assert our_entity(restored, "bob") == our_entity(receiver, "bob")


# ---- portable boundaries (11 §5)


def boundaries() -> dict:
    if not BOUNDARIES.is_file():
        pytest.skip(f"{BOUNDARIES} is not present")
    return json.loads(BOUNDARIES.read_text(encoding="utf-8"))


@pytest.mark.parametrize("runtime", ["ours", "peer"])
def test_invalid_json_wires_through_add(tmp_path, runtime):
    entries = boundaries()["invalid_json"]
    assert entries
    executable = our_executable() if runtime == "ours" else peer_executable()
    for entry in entries:
        with pytest.raises(CliError) as error:
            run_cli(executable, tmp_path / f"{runtime}.fgraph", "add", entry["wire"])
        assert error.value.name == entry["error"], entry["name"]


@pytest.mark.parametrize("route", ["ours->ours", "ours->peer", "peer->ours"])
def test_unicode_value_survives_events_and_apply(tmp_path, route):
    value = boundaries()["unicode_value"]
    data = [{"id": "portable/unicode", "portable/value": value}, {"portable/anonymous": True}]
    writer, receiver = route.split("->")
    source = tmp_path / "source.fgraph"
    if writer == "ours":
        with deterministic_env():
            db = fgraph.connect(str(source))
            db.transact(data)
            db.close()
        stream = our_tail(source)
    else:
        peer(source, "add", json.dumps(data, ensure_ascii=True))
        stream = peer(source, "tail")
    assert len(lines_of(stream)) == 1 and "\u2028".encode() in stream
    target = tmp_path / "target.fgraph"
    if receiver == "ours":
        summary = our_apply(target, stream)
        got = our_entity(target, "portable/unicode")
        assert our_tail(target) == stream
    else:
        stream_file = tmp_path / "stream.ndjson"
        stream_file.write_bytes(stream)
        summary = peer_json(target, "apply", str(stream_file))
        got = peer_json(target, "get", "portable/unicode")
        assert peer(target, "tail") == stream
    assert summary["applied"] == 1, summary
    assert got == {"portable/value": value}
