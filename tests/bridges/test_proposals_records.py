"""The proposal/1 record (issue 51, docs/proposals.md P1): one canonical line, an id that makes a
repeated call idempotent, and every line read back checked as hostile input."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.bridges.proposals import records
from fgraph.core.canonical import dumps_bytes, loads
from fgraph.core.errors import FormatError
from fgraph.core.limits import MAX_PROPOSAL_LINE_BYTES


@pytest.fixture
def event_line():
    with fgraph.connect(":memory:") as db:
        db.transact({"id": "ada", "person/name": "Ada"}, by="agent", source="chat 7")
        db.transact([{"person/name": "anon"}], by="agent", source="chat 7")
        return [line.encode("utf-8") for line in db.iter_events()]


def record(line: bytes, **changes) -> dict:
    made = records.make_record(tool="remember", arguments={"facts": {"id": "ada"}}, by="agent", source="chat 7",
                               client="claude-code", session="s-1", basis_tx=64, proposed_at=1_700_000_000_000_000,
                               event_line=line)
    return {**made, **changes}


def test_the_line_is_canonical_and_reads_back(event_line):
    made = record(event_line[0])
    line = records.encode(made)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line == dumps_bytes(loads(line)) + b"\n"
    assert records.decode(line, 1) == made
    assert made["event"].encode() == event_line[0]          # the bytes tail printed
    assert made["event_digest"].startswith("blake3:")
    assert records.looks_like_proposals(line)
    assert not records.looks_like_proposals(event_line[0])


def test_the_id_is_the_call_s_so_a_repeated_call_is_idempotent():
    one = records.proposal_id("remember", {"facts": {"id": "ada", "x": 1}})
    assert one == records.proposal_id("remember", {"facts": {"x": 1, "id": "ada"}})   # key order does not matter
    assert one != records.proposal_id("forget", {"facts": {"id": "ada", "x": 1}})
    assert one.startswith("p-") and len(one) == 26


def test_event_entities_names_and_eids(event_line):
    assert "ada" in records.event_entities(record(event_line[0]))
    anonymous = records.event_entities(record(event_line[1]))
    assert any(len(e) == 36 and e.count("-") == 4 for e in anonymous)


@pytest.mark.parametrize("damage, what", [
    (lambda r: {**r, "extra": 1}, "fields differ"),
    (lambda r: {k: v for k, v in r.items() if k != "session"}, "fields differ"),
    (lambda r: {**r, "fgraph": "proposal/2"}, "not a proposal/1"),
    (lambda r: {**r, "arguments": {"facts": {"id": "bob"}}}, "not the id of its call"),
    (lambda r: {**r, "id": "p-zz"}, "id must be"),
    (lambda r: {**r, "event": r["event"].replace("Ada", "Eve")}, "event_digest does not match"),
    (lambda r: {**r, "basis_tx": 3}, "basis_tx"),
    (lambda r: {**r, "basis_tx": True}, "basis_tx"),
    (lambda r: {**r, "by": 5}, "by must be text"),
    (lambda r: {**r, "by": "someone else"}, "differs from the event"),
    (lambda r: {**r, "proposed_at": 1.5}, "proposed_at"),
    (lambda r: {**r, "client": "x" * 5000}, "client is over"),
])
def test_a_damaged_record_is_a_format_error_naming_the_line(event_line, damage, what):
    line = dumps_bytes(damage(record(event_line[0])))
    with pytest.raises(FormatError) as raised:
        records.decode(line, 7)
    assert raised.value.line == 7 and "line 7" in raised.value.message and what in raised.value.message
    assert raised.value.hint


def test_an_event_edited_with_its_digest_is_still_checked_as_apply_checks_it(event_line):
    made = record(event_line[0])
    forged = made["event"].replace('"fgraph":"event/1"', '"fgraph":"event/9"')
    with pytest.raises(FormatError, match="not an event/1 line apply accepts"):
        records.decode(dumps_bytes({**made, "event": forged, "event_digest": records.event_digest(forged.encode())}), 2)
    spaced = made["event"].replace(",", ", ")
    with pytest.raises(FormatError, match="not a canonical event/1 line"):
        records.decode(dumps_bytes({**made, "event": spaced, "event_digest": records.event_digest(spaced.encode())}), 2)


@pytest.mark.parametrize("line, what", [
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"a":1,"a":2}', "not strict JSON"),
    (b"[1,2]", "not a proposal/1"),
    (b"{" + b" " * (MAX_PROPOSAL_LINE_BYTES + 1) + b"}", "over"),
])
def test_hostile_lines(line, what):
    with pytest.raises(FormatError, match=what):
        records.decode(line, 1)
