"""Proves ``fgraph sync`` (docs/replication.md) on real files through the CLI: three stores written by
separate processes fan into one, every event exactly once and in its source's order; a re-run
applies nothing; a syncer killed with SIGKILL and restarted ends where an uninterrupted one does;
a kill between a batch's commit and its cursor write re-sends events that apply skips; a replaced
source or target is noticed; ``--follow`` picks up new commits and stops cleanly on SIGTERM; bad
inputs give typed errors. The ordering claims of docs/replication.md are checked here too."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

import fgraph
from fgraph.core.errors import Conflict, ValueTypeError
from fgraph.cli import main as cli
from tests.support.syncing import FGRAPH, SOURCES, assert_fan_in, env, fg, state, sync, tail, wait_for, write_sources


# ----------------------------------------------------------------- fan-in and re-run

def test_three_sources_fan_in_once_and_a_rerun_applies_nothing(tmp_path):
    write_sources(tmp_path, 30)
    first = sync(tmp_path, "--batch-size", "7")
    assert (first["events"], first["applied"], first["already_applied"]) == (90, 90, 0)
    for report in first["sources"]:
        assert (report["events"], report["applied"], report["batches"], report["cursor"]) == (30, 30, 5, "new")
        assert report["position"] == report["latest"]
    assert first["basis_tx"] == tail_count_basis(tmp_path / "central.db")
    assert_fan_in(tmp_path)
    central = state(tmp_path / "central.db")
    for n in SOURCES:
        assert central == {**central, **state(tmp_path / f"{n}.db", names=(n,))}

    again = sync(tmp_path)
    assert (again["events"], again["applied"], again["already_applied"]) == (0, 0, 0)
    assert [r["cursor"] for r in again["sources"]] == ["resumed"] * 3
    assert again["basis_tx"] == first["basis_tx"]

    write_sources(tmp_path, 5, first=30, names=("b",))
    more = sync(tmp_path)
    assert [(r["source"], r["applied"]) for r in more["sources"]] == [("a.db", 0), ("b.db", 5), ("c.db", 0)]
    assert_fan_in(tmp_path)


def tail_count_basis(path: Path) -> int:
    with fgraph.connect(str(path), read_only=True) as db:
        return db.latest_tx()


def test_pretty_output_and_the_db_option_as_target(tmp_path):
    write_sources(tmp_path, 2, names=("a",))
    proc = fg("--db", "central.db", "sync", "--from", "a.db", cwd=tmp_path)
    assert proc.stdout.decode().startswith("{\n  \"already_applied\": 0,\n  \"applied\": 2,")
    assert (tmp_path / "central.db.sync.json").exists()


# ----------------------------------------------------------------- resumption

def test_a_killed_syncer_restarted_ends_like_an_uninterrupted_one(tmp_path):
    write_sources(tmp_path, 150)
    total = 450
    reference = sync(tmp_path, target="reference.db")
    assert reference["applied"] == total

    cursor = tmp_path / "central.db.sync.json"
    proc = subprocess.Popen([FGRAPH, "sync", *[a for n in SOURCES for a in ("--from", f"{n}.db")],
                             "--to", "central.db", "--batch-size", "1", "--follow"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env())
    deadline = time.monotonic() + 60
    while progress(cursor) < 60 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL, proc.stderr.read().decode()
    proc.stderr.close()
    synced = len(tail(tmp_path / "central.db"))
    assert 0 < synced < total                              # killed mid-way

    resumed = sync(tmp_path)
    assert resumed["applied"] == total - synced
    assert resumed["already_applied"] in (0, 1)            # 1 when killed between a commit and its cursor write
    assert "resumed" in [r["cursor"] for r in resumed["sources"]]
    assert_fan_in(tmp_path)
    assert sorted(tail(tmp_path / "central.db")) == sorted(tail(tmp_path / "reference.db"))
    assert state(tmp_path / "central.db") == state(tmp_path / "reference.db")


def progress(cursor: Path) -> int:
    """How far the cursor file says the sources are synced, in source tx ids past genesis."""
    try:
        return sum(entry["tx"] - 64 for entry in json.loads(cursor.read_bytes())["sources"].values())
    except FileNotFoundError:
        return 0


def test_a_kill_between_commit_and_cursor_write_resends_events_that_apply_skips(tmp_path):
    write_sources(tmp_path, 4)
    sync(tmp_path)
    cursor = tmp_path / "central.db.sync.json"
    before_kill = cursor.read_bytes()
    write_sources(tmp_path, 3, first=4)
    sync(tmp_path)
    lines = tail(tmp_path / "central.db")
    cursor.write_bytes(before_kill)                        # as if killed after the commits, before the cursor writes
    again = sync(tmp_path)
    assert (again["events"], again["applied"], again["already_applied"]) == (9, 0, 9)
    assert [r["cursor"] for r in again["sources"]] == ["resumed"] * 3
    assert tail(tmp_path / "central.db") == lines


def test_a_replaced_source_or_target_is_read_again_from_genesis(tmp_path):
    write_sources(tmp_path, 3)
    sync(tmp_path)
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"a.db{suffix}").unlink(missing_ok=True)
    write_sources(tmp_path, 2, first=100, names=("a",), seed="new")     # a new store at the same path
    replaced = sync(tmp_path)
    assert [(r["cursor"], r["events"], r["applied"]) for r in replaced["sources"]] == \
        [("rescan", 2, 2), ("resumed", 0, 0), ("resumed", 0, 0)]

    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"central.db{suffix}").unlink(missing_ok=True)   # the cursor file stays behind
    rebuilt = sync(tmp_path)
    assert [r["cursor"] for r in rebuilt["sources"]] == ["rescan"] * 3
    assert rebuilt["applied"] == 8
    assert_fan_in(tmp_path)


def test_a_damaged_cursor_file_is_a_format_error(tmp_path):
    write_sources(tmp_path, 1, names=("a",))
    (tmp_path / "central.db.sync.json").write_text("{not json")
    proc = sync(tmp_path, names=("a",), check=False)
    assert proc.returncode == 1 and proc.stderr.decode().startswith("FormatError: ")


# ----------------------------------------------------------------- --follow

def test_follow_picks_up_new_commits_and_stops_cleanly_on_sigterm(tmp_path):
    write_sources(tmp_path, 3)
    proc = subprocess.Popen([FGRAPH, "--json", "sync", *[a for n in SOURCES for a in ("--from", f"{n}.db")],
                             "--to", "central.db", "--follow", "--interval", "0.05"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    try:
        wait_for(lambda: len(tail_if_synced(tmp_path / "central.db")) == 9, 30)
        fg("--db", "b.db", "add", '{"id":"late","item/v":1}', cwd=tmp_path, seed="src-b-late")
        wait_for(lambda: has_entity(tmp_path / "central.db", "late"), 30)
        second = sync(tmp_path, check=False)               # one syncer per target
        assert second.returncode == 1 and second.stderr.decode().startswith("Conflict: another `fgraph sync`")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    summary = json.loads(out)
    assert (summary["applied"], [r["applied"] for r in summary["sources"]]) == (10, [3, 4, 3])
    assert [r["position"] == r["latest"] for r in summary["sources"]] == [True] * 3
    assert sync(tmp_path)["events"] == 0                   # the cursor was saved
    assert_fan_in(tmp_path)


def tail_if_synced(path: Path) -> list[str]:
    """The target's events once a first batch is committed (before that it may be mid-creation)."""
    return tail(path) if Path(f"{path}.sync.json").exists() else []


def has_entity(path: Path, name: str) -> bool:
    with fgraph.connect(str(path), read_only=True) as db:
        try:
            db.resolve(name)
            return True
        except fgraph.NotFound:
            return False


# ----------------------------------------------------------------- errors

def test_a_conflicting_event_names_its_source_and_event_and_writes_nothing_of_its_batch(tmp_path):
    fg("--db", "a.db", "declare", "user/email", "--type", "text", "--unique", cwd=tmp_path, seed="src-a")
    fg("--db", "a.db", "add", '{"id":"alice","user/email":"x@example.test"}', cwd=tmp_path, seed="src-a")
    fg("--db", "b.db", "declare", "user/email", "--type", "text", "--unique", cwd=tmp_path, seed="src-b")
    fg("--db", "b.db", "add", '{"id":"bob","user/email":"y@example.test"}', cwd=tmp_path, seed="src-b")
    fg("--db", "b.db", "add", '{"id":"carol","user/email":"x@example.test"}', cwd=tmp_path, seed="src-b")
    carol = tail(tmp_path / "b.db")[-1]
    event = json.loads(carol)["event"]
    proc = sync(tmp_path, names=("a", "b"), check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and proc.stdout == b""
    assert err.startswith(f"Conflict: sync from 'b.db' stopped at event {event} (source tx ")
    assert "nothing of its batch was written" in err and "unique value 'x@example.test'" in err
    central = tail(tmp_path / "central.db")
    assert central == tail(tmp_path / "a.db")              # b's batch (declaration, bob, carol) rolled back
    assert not has_entity(tmp_path / "central.db", "bob")
    # Resolved on the target (the value retracted from its owner there), the batch goes through.
    fg("--db", "central.db", "retract", "alice", "user/email", '"x@example.test"', cwd=tmp_path, seed="hub")
    resolved = sync(tmp_path, names=("a", "b"))
    assert [r["applied"] for r in resolved["sources"]] == [0, 3]
    with fgraph.connect(str(tmp_path / "central.db"), read_only=True) as db:
        assert db.entity("carol") == {"user/email": "x@example.test"}


def test_bad_inputs(tmp_path):
    write_sources(tmp_path, 1, names=("a",))
    missing = fg("sync", "--from", "a.db", "--from", "nope.db", "--to", "central.db", cwd=tmp_path, check=False)
    assert missing.returncode == 1 and missing.stderr.decode().startswith("NotFound: source 'nope.db'")
    assert not (tmp_path / "central.db").exists()          # a typo does not leave an empty target behind
    same = fg("sync", "--from", "a.db", "--to", "./a.db", cwd=tmp_path, check=False)
    assert same.returncode == 2 and "is the target" in same.stderr.decode()
    twice = fg("sync", "--from", "a.db", "--from", "a.db", "--to", "central.db", cwd=tmp_path, check=False)
    assert twice.returncode == 2 and "given twice" in twice.stderr.decode()
    none = fg("sync", "--to", "central.db", cwd=tmp_path, check=False)
    assert none.returncode == 2
    clash = fg("--db", "other.db", "sync", "--from", "a.db", "--to", "central.db", cwd=tmp_path, check=False)
    assert clash.returncode == 2
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 10)
    junk = fg("sync", "--from", "junk.db", "--to", "central.db", cwd=tmp_path, check=False)
    assert junk.returncode == 1 and junk.stderr.decode().startswith("FormatError: source 'junk.db'")
    assert not (tmp_path / "central.db").exists()
    code = cli.run(["sync", "--from", str(tmp_path / "a.db"), "--to", str(tmp_path / "a.db")])
    assert code == 2


def test_the_library_checks_its_arguments(tmp_path):
    from fgraph.bridges.sync import files as library
    with pytest.raises(ValueTypeError):
        library.sync([], str(tmp_path / "t.db"))
    with pytest.raises(ValueTypeError):
        library.sync([str(tmp_path / "a.db")], str(tmp_path / "t.db"), batch_size=0)


# ----------------------------------------------------------------- the ordering claims of docs/replication.md

def source_events(tmp_path: Path, *requests) -> list[str]:
    with fgraph.connect(str(tmp_path / "src.db"), event_factory=seeded("order")) as db:
        for request in requests:
            db.transact(request)
        return list(db.iter_events())


def seeded(seed: str):
    from fgraph.core.identity import seeded_event_uuid
    return lambda tx: seeded_event_uuid(seed, tx)


def apply(path: Path, lines: list[str]):
    with fgraph.connect(str(path)) as db:
        try:
            return db.apply_summary(lines)
        except fgraph.FgraphError as exc:
            return exc


def test_out_of_order_events_fail_loudly_or_diverge_silently(tmp_path):
    born, reborn, friend, forget = source_events(
        tmp_path, {"id": "ada", "p/born": 1815}, {"id": "ada", "p/born": 1816},
        {"id": "bob", "p/friend": {"ref": "ada"}}, ["retract", "ada", "p/born", 1816])
    # A replacement before its assertion, or a ref before its target exists: the event uses a name
    # its created list does not hold, and apply rejects it (the whole call rolls back).
    for i, lines in enumerate(([reborn, born], [friend])):
        result = apply(tmp_path / f"loud{i}.db", lines)
        assert isinstance(result, fgraph.FgraphError) and result.name == "TypeError" and result.line == 1
    # A retraction before its assertion applies as a retraction of nothing; the assertion, applied
    # later, then stays live: the receiver silently disagrees with the source.
    silent = tmp_path / "silent.db"
    assert apply(silent, [forget])["applied"] == 1
    assert apply(silent, [born, reborn, friend, forget]) == {"already_applied": 1, "applied": 3,
                                                             "basis_tx": 72, "events": 4, "noop": 0}
    with fgraph.connect(str(silent), read_only=True) as db, \
            fgraph.connect(str(tmp_path / "src.db"), read_only=True) as src:
        assert db.entity("ada") == {"p/born": 1816} and src.entity("ada") == {}


def test_two_updates_swapped_diverge_silently(tmp_path):
    born, first, second = source_events(tmp_path, {"id": "ada", "p/born": 1815}, {"id": "ada", "p/born": 1816},
                                        {"id": "ada", "p/born": 1817})
    swapped = tmp_path / "swapped.db"
    assert apply(swapped, [born, second, first])["applied"] == 3     # no error anywhere
    with fgraph.connect(str(swapped), read_only=True) as db:
        assert db.entity("ada") == {"p/born": 1816}                   # the source says 1817


def test_across_sources_the_later_arrival_wins_not_the_later_write(tmp_path):
    fg("--db", "a.db", "add", '{"id":"ada","p/born":1815}', cwd=tmp_path, seed="src-a")
    fg("--db", "b.db", "add", '{"id":"ada","p/born":1816}', cwd=tmp_path, seed="src-b")   # written later
    sync(tmp_path, names=("b", "a"), target="ba.db")
    sync(tmp_path, names=("a", "b"), target="ab.db")
    with fgraph.connect(str(tmp_path / "ba.db"), read_only=True) as ba, \
            fgraph.connect(str(tmp_path / "ab.db"), read_only=True) as ab:
        assert ba.entity("ada") == {"p/born": 1815} and ab.entity("ada") == {"p/born": 1816}
    # One hub's tail, replayed in its order, gives every replica the hub's state.
    fg("sync", "--from", "ba.db", "--to", "replica.db", cwd=tmp_path)
    with fgraph.connect(str(tmp_path / "replica.db"), read_only=True) as replica:
        assert replica.entity("ada") == {"p/born": 1815}


def test_a_conflict_is_the_typed_error_of_apply(tmp_path):
    """The library raises the error class apply raised, with the source and event attached."""
    from fgraph.bridges.sync import files as library
    for name, seed in (("a", "src-a"), ("b", "src-b")):
        with fgraph.connect(str(tmp_path / f"{name}.db"), event_factory=seeded(seed)) as db:
            db.declare("user/email", type="text", unique=True)
            db.transact({"id": f"{name}-user", "user/email": "same@example.test"})
    with pytest.raises(Conflict) as caught:
        library.sync([str(tmp_path / "a.db"), str(tmp_path / "b.db")], str(tmp_path / "t.db"), batch_size=1)
    assert caught.value.source == str(tmp_path / "b.db") and caught.value.source_tx is not None
    assert caught.value.event == json.loads(tail(tmp_path / "b.db")[-1])["event"]


def test_a_source_stream_carries_what_its_events_depend_on(tmp_path):
    """B learned ada from A (by sync) and then referred to her: B's own stream holds A's event
    first, so B alone syncs; B's event without A's is rejected."""
    fg("--db", "a.db", "add", '{"id":"ada","p/born":1815}', cwd=tmp_path, seed="src-a")
    fg("sync", "--from", "a.db", "--to", "b.db", cwd=tmp_path)
    fg("--db", "b.db", "add", '{"id":"bob","p/friend":{"ref":"ada"}}', cwd=tmp_path, seed="src-b")
    b_events = tail(tmp_path / "b.db")
    assert b_events[0] == tail(tmp_path / "a.db")[0]
    assert isinstance(apply(tmp_path / "alone.db", b_events[1:]), fgraph.FgraphError)
    summary = sync(tmp_path, names=("b", "a"))
    assert [(r["applied"], r["already_applied"]) for r in summary["sources"]] == [(2, 0), (0, 1)]
    with fgraph.connect(str(tmp_path / "central.db"), read_only=True) as db:
        assert db.entity("bob", depth=2) == {"p/friend": {"p/born": 1815}}
