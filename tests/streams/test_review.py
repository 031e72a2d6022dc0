"""Proves `fgraph review` (issue 35, R1/R4): built on the dry run, it lists per entity what the
stream asserts and retracts with its provenance, the receiver values it replaces, names that
unify, events already applied, unique collisions and every line apply would refuse — and it
writes nothing, in bounded memory (capped lists that count what they leave out)."""

from __future__ import annotations

import io
import os

import fgraph
from fgraph.core.canonical import dumps, loads
from fgraph.streams import review as review_module
from fgraph.streams.digest import digest_of
from fgraph.streams.render import markdown
from fgraph.streams.review import review
from tests.support.clock import stepping_clock


def store(seed: str, start: int):
    os.environ["FGRAPH_EVENT_SEED"] = seed
    try:
        return fgraph.connect(":memory:", clock=stepping_clock(start))
    finally:
        del os.environ["FGRAPH_EVENT_SEED"]


def source_stream() -> bytes:
    db = store("review-source", 1_800_000_000_000_000)
    try:
        db.transact({"id": "ada", "person/name": "Ada", "person/born": 1815}, by="alice", source="notes.md")
        db.declare("person/email", type="text", unique=True)
        db.transact({"id": "bob", "person/email": "b@x"})
        db.transact({"id": "ada", "person/born": 1816})
        return "".join(line + "\n" for line in db.iter_events(64)).encode()
    finally:
        db.close()


def receiver():
    db = store("review-receiver", 1_900_000_000_000_000)
    db.transact({"id": "ada", "person/born": 1700})
    return db


def run(db, data: bytes) -> dict:
    return review(db, io.BytesIO(data), "s.events.ndjson")


def test_facts_provenance_replacements_and_unifications():
    data = source_stream()
    db = receiver()
    try:
        before = (db.latest_tx(), db.logical_digest())
        result = run(db, data)
        assert (db.latest_tx(), db.logical_digest()) == before   # nothing written
    finally:
        db.close()
    assert result["would_apply"] and result["digest"] == digest_of(io.BytesIO(data))
    assert result["counts"]["new"] == 4 and result["counts"]["replaced"] == 1 and result["lines"] == 4
    ada = next(e for e in result["entities"] if e["entity"] == "ada")
    assert ada["unifies_at_line"] == 1 and ada["replaces"] == 1
    first = ada["events"][0]
    assert (first["line"], first["by"], first["source"]) == (1, "alice", "notes.md")
    assert first["at"].startswith("2027-") and first["at"].endswith("Z")
    assert {"op": "assert", "attribute": "person/born", "value": "1815", "tag": "int",
            "replaces": [{"value": "1700", "tx": 67}]} in first["facts"]
    last = ada["events"][1]["facts"]
    assert [f["op"] for f in last] == ["retract", "assert"] and "replaces" not in last[1]  # the stream's own value
    assert [u["entity"] for u in result["unified"]["items"]] == ["ada"]
    text = markdown(result)
    assert "**apply would accept the stream**" in text and "replaces the receiver's 1700 (tx 67)" in text
    assert "### ada (unifies with the receiver's entity, line 1)" in text and "by alice · source notes.md" in text


def test_already_applied_events_and_unique_collisions():
    data = source_stream()
    db = receiver()
    try:
        db.apply_summary(data.splitlines(keepends=True)[0].decode())
        db.transact({"id": "carol", "person/email": "b@x"})
        result = run(db, data)
    finally:
        db.close()
    assert result["counts"]["already_applied"] == 1
    assert result["already_applied"]["items"][0]["line"] == 1
    assert not result["would_apply"]
    [collision] = result["unique_collisions"]["items"]
    assert collision["line"] == 3 and "unique value 'b@x'" in collision["message"] and collision["entities"] == ["bob"]
    assert "**apply would refuse the whole stream**" in markdown(result)


def test_every_refused_line_is_listed_after_the_dry_run_stops():
    lines = source_stream().splitlines(keepends=True)
    broken = [lines[0], b"{not json\n", lines[1], b'{"fgraph":"event/1"}\n', lines[2]]
    db = receiver()
    try:
        result = run(db, b"".join(broken))
    finally:
        db.close()
    assert result["dry_run_stopped_at_line"] == 2 and not result["would_apply"]
    assert [(r["line"], r["error"]) for r in result["refused"]["items"]] == [(2, "TypeError"), (4, "TypeError")]
    assert result["lines"] == 5 and result["digest"] == digest_of(io.BytesIO(b"".join(broken)))
    assert "the dry run stopped at line 2" in markdown(result)


def test_the_lists_are_capped_and_say_how_much_they_leave_out(monkeypatch):
    monkeypatch.setattr(review_module, "ENTITY_CAP", 2)
    monkeypatch.setattr(review_module, "DETAIL_CAP", 1)
    db = store("review-big", 1_800_000_000_000_000)
    try:
        for i in range(5):
            db.transact([{"id": f"e{i}", "n/v": i}, {"id": "hub", "n/v": i}])
        data = "".join(line + "\n" for line in db.iter_events(64)).encode()
    finally:
        db.close()
    rx = receiver()
    try:
        result = run(rx, data)
    finally:
        rx.close()
    assert [e["entity"] for e in result["entities"]] == ["e0", "hub"]
    hub = result["entities"][1]
    assert len(hub["events"]) == 1 and hub["events_left_out"] == 4 and hub["facts"] == 9   # 5 asserted, 4 retracted
    assert result["counts"]["facts_not_detailed"] == 4
    text = markdown(result)
    assert "… 4 more events of this entity not shown" in text and "4 facts about entities beyond the first 2" in text


def test_the_review_result_is_plain_json():
    db = receiver()
    try:
        result = run(db, source_stream())
    finally:
        db.close()
    assert loads(dumps(result)) == result


class Pipe(io.RawIOBase):
    """The same bytes as a pipe would give them: readable once, not seekable."""

    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)

    def readable(self):
        return True

    def seekable(self):
        return False

    def readinto(self, buffer):
        chunk = self._data.read(len(buffer))
        buffer[:len(chunk)] = chunk
        return len(chunk)


def test_a_file_reviewed_first_as_fast_as_apply_says_what_a_pipe_reviewed_with_savepoints_says():
    """A seekable stream is dry-run without a savepoint per event, and again with them when a
    conflict shows up; the review is the same as the careful one of a pipe, conflicts or not."""
    data = source_stream()
    clash = store("review-clash", 1_950_000_000_000_000)
    try:
        clash.declare("person/email", type="text", unique=True)
        clash.transact({"id": "carol", "person/email": "b@x"})       # bob's email is taken here
        for make, passes in ((receiver, [True]), (lambda: clash, [True, False])):
            db = make()
            calls, real = [], db.apply_summary

            def spy(*args, optimistic=False, **kwargs):
                calls.append(optimistic)
                return real(*args, optimistic=optimistic, **kwargs)
            db.apply_summary = spy
            seekable = run(db, data)
            assert calls == passes                                      # fast first; careful after a conflict
            piped = review(db, io.BufferedReader(Pipe(data)), "s.events.ndjson")
            assert calls == passes + [False] and seekable == piped
        assert seekable["counts"]["conflicting"] == 1 and seekable["unique_collisions"]["items"]
    finally:
        clash.close()
