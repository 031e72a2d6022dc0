"""What every import format shares: the event builder declares each attribute once and lists every
name in order of first use, relation types are folded into the attribute grammar, the event UUID
is fixed forever for a given format and record, and entity names that fgraph keeps for attributes
or cannot store are bad records."""

from __future__ import annotations

import pytest

from fgraph.bridges.importers import records
from fgraph.bridges.importers.records import BadRecord, EventBuilder


def test_attributes_are_declared_once_and_names_listed_in_order_of_first_use():
    builder = EventBuilder()
    builder.named("Ada")
    builder.fact("Ada", builder.attribute("note/tag", "text", many=True), "a", "text")
    builder.fact("Ada", builder.attribute("note/tag", "text", many=True), "b", "text")
    note = builder.relation("Ada", "knew", "Babbage")
    assert note is None   # a kind already in the grammar is not folded
    assert builder.created == ["memory/name", "Ada", "note/tag", "Babbage", "rel/knew"]
    declared = [item for item in builder.asserted if item[1] == "fgraph/type"]
    assert [item[0] for item in declared] == ["memory/name", "note/tag", "rel/knew"]
    assert builder.asserted[-1] == ["Ada", "rel/knew", {"ref": "Babbage"}, "ref"]
    event = builder.event("e", 5, by="alice")
    assert (event["fgraph"], event["at"], event["by"], event["retracted"]) == ("event/1", 5, "alice", [])
    assert "source" not in event and "meta" not in event


@pytest.mark.parametrize("kind, attribute", [
    ("worked with", "rel/worked-with"), ("Entwickelt in", "rel/entwickelt-in"), ("!!!", "rel/related"),
    ("x" * 300, "rel/" + "x" * 200),
])
def test_relation_types_are_folded_into_the_attribute_grammar(kind, attribute):
    assert records.relation_attribute(kind) == attribute


def test_the_event_uuid_is_fixed_forever_for_a_format_and_a_record():
    # a change here would make every earlier import look new: re-imports would write everything again
    assert records.event_uuid("mcp-memory", {"a": 1}) == "42919084-c8a2-5fba-aefa-ae09afcae903"
    assert records.event_uuid("jsonl-log", {"a": 1}) != records.event_uuid("mcp-memory", {"a": 1})


@pytest.mark.parametrize("value, reason", [
    ("", "is not a non-empty string"), (3, "is not a non-empty string"), ("ci/cd", "looks like an attribute name"),
    ("fgraph/x", "looks like an attribute name"), ("bell\u0007", "invalid"),
])
def test_names_fgraph_cannot_keep_as_entities_are_bad_records(value, reason):
    with pytest.raises(BadRecord, match=reason):
        records.entity_name(value, "entity name")
    assert records.entity_name("Ada Lovelace", "entity name") == "Ada Lovelace"


def test_shape_checks_name_what_is_wrong():
    with pytest.raises(BadRecord, match="observations is not an array of strings"):
        records.texts(["a", 1], "observations")
    with pytest.raises(BadRecord, match="content is not a JSON object"):
        records.json_object([], "content")
    assert records.relation_kind("knew", "type") == "knew"
