"""Proves `fgraph render` (issue 35, R2): one line per fact under its event's header, values shown
by tag, a pure function of each event (stable), and a line that is no event rendered, not fatal."""

from __future__ import annotations

import os

import fgraph
from fgraph.streams.render import render_event, render_lines, show_value
from tests.support.clock import stepping_clock

START = 1_800_000_000_000_000


def stream(value=1815) -> str:
    os.environ["FGRAPH_EVENT_SEED"] = "render"
    try:
        db = fgraph.connect(":memory:", clock=stepping_clock(START))
    finally:
        del os.environ["FGRAPH_EVENT_SEED"]
    try:
        db.transact({"id": "ada", "person/name": "Ada Lovelace", "person/born": value}, by="alice", source="notes.md")
        db.transact([{"id": {"tmp": "t"}, "n/v": {"bytes": "AAE="}}, {"id": "h", "n/l": {"ref": {"tmp": "t"}}}])
        db.transact({"id": "ada", "person/born": value + 1, "person/seen": {"instant": "2026-02-01T00:00:00Z"},
                     "doc/j": {"json": {"k": [1, 2]}}})
        return "".join(line + "\n" for line in db.iter_events(64))
    finally:
        db.close()


def test_one_line_per_fact_grouped_by_event():
    text = "\n".join(render_lines(stream().encode()))
    blocks = text.split("\n\n")
    assert blocks[0].splitlines() == [
        blocks[0].splitlines()[0], '  by "alice"', '  source "notes.md"', "  creates ada", "  creates person/born",
        "  creates person/name", "  assert ada person/born = 1815", '  assert ada person/name = "Ada Lovelace"']
    assert blocks[0].startswith("event ") and " at 2027-" in blocks[0].splitlines()[0]
    assert "  assert h n/l = -> eid:" in blocks[1] and "= base64:AAE=" in blocks[1]
    third = blocks[2].splitlines()
    assert "  retract ada person/born = 1815" in third and "  assert ada person/born = 1816" in third
    assert "  assert ada person/seen = 2026-02-01T00:00:00.000000Z" in third
    assert '  assert ada doc/j = json {"k":[1,2]}' in third


def test_a_changed_value_changes_only_its_fact_lines():
    before, after = list(render_lines(stream(1815))), list(render_lines(stream(1900)))
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after)
    assert changed == [("  assert ada person/born = 1815", "  assert ada person/born = 1900"),
                       ("  retract ada person/born = 1815", "  retract ada person/born = 1900"),
                       ("  assert ada person/born = 1816", "  assert ada person/born = 1901")]


def test_values_by_tag():
    assert show_value("a b", "text") == '"a b"'
    assert show_value(1.0, "float") == "1.0" and show_value(2, "float") == "2.0"
    assert show_value(True, "bool") == "true"
    assert show_value({"vector": [0.5, 1.0]}, "vector") == "vector [0.5,1]"   # components in canonical JSON
    long = show_value({"vector": [0.0] * 20}, "vector")
    assert long.startswith("vector[20] [0, 0,") and "blake3:" in long
    assert show_value({"ref": "bob"}, "ref") == "-> bob"
    assert show_value({"ref": "a name"}, "ref") == '-> "a name"'


def test_a_line_that_is_no_event_is_rendered_and_the_rest_follows():
    good = stream().splitlines()[0]
    lines = list(render_lines(f"not json\n{good}\n".encode()))
    assert lines[0].startswith("line 1: not an event/1 record") and lines[1] == '  raw "not json"'
    assert lines[3].startswith("event ")


def test_render_event_is_pure():
    record = {"fgraph": "event/1", "event": "x", "at": 0, "created": [], "asserted": [["a", "b/c", 1, "int"]],
              "retracted": [], "tx_facts": [["doc/r", True, "bool"]], "meta": {"k": 1}}
    assert render_event(record) == render_event(dict(record)) == [
        "event x at 1970-01-01T00:00:00.000000Z", '  meta {"k":1}', "  tx doc/r = true", "  assert a b/c = 1"]
