"""The mcp-memory format module: one entity line and one relation line become exactly the event/1
records the importer has always made (the bytes and the name-based event UUIDs are pinned: a
re-import must recognise every record imported by an earlier version), and it declares --mirror."""

from __future__ import annotations

import pytest

from fgraph.bridges.importers.items import ImportContext
from fgraph.bridges.importers.mcp_memory import IMPORTER
from fgraph.bridges.importers.records import BadRecord
from fgraph.core.canonical import dumps

CONTEXT = ImportContext(at=1767225600000000, label="memory.jsonl")

ENTITY = (
    '{"asserted":[["memory/name","fgraph/type","text","text"],["memory/name","fgraph/unique",true,"bool"],'
    '["Ada","memory/name","Ada","text"],["memory/type","fgraph/type","text","text"],'
    '["Ada","memory/type","person","text"],["memory/observation","fgraph/type","text","text"],'
    '["memory/observation","fgraph/many",true,"bool"],["Ada","memory/observation","born 1815","text"]],'
    '"at":1767225600000000,"created":["memory/name","Ada","memory/type","memory/observation"],'
    '"event":"c9964725-1cd2-5b26-9341-9fd165504e36","fgraph":"event/1","retracted":[],"source":"memory.jsonl:1"}')
RELATION = (
    '{"asserted":[["memory/name","fgraph/type","text","text"],["memory/name","fgraph/unique",true,"bool"],'
    '["Ada","memory/name","Ada","text"],["Babbage","memory/name","Babbage","text"],'
    '["rel/worked-with","fgraph/type","ref","text"],["rel/worked-with","fgraph/many",true,"bool"],'
    '["Ada","rel/worked-with",{"ref":"Babbage"},"ref"]],"at":1767225600000000,'
    '"created":["memory/name","Ada","Babbage","rel/worked-with"],"event":"9f2a88cd-fa4b-5e45-97e8-75b55d57949c",'
    '"fgraph":"event/1","meta":{"attribute":"rel/worked-with","relation_type":"worked with"},"retracted":[],'
    '"source":"memory.jsonl:2"}')


def test_an_entity_and_a_relation_are_the_same_bytes_as_ever():
    entity = {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["born 1815"]}
    relation = {"type": "relation", "from": "Ada", "to": "Babbage", "relationType": "worked with"}
    assert dumps(IMPORTER.event(entity, CONTEXT, 1)) == ENTITY
    assert dumps(IMPORTER.event(relation, CONTEXT, 2)) == RELATION


def test_the_author_and_meta_of_the_run_are_kept_beside_a_folded_relation_type():
    relation = {"type": "relation", "from": "Ada", "to": "Babbage", "relationType": "worked with"}
    event = IMPORTER.event(relation, ImportContext(at=1, label="f", by="ops", meta={"ticket": 7}), 9)
    assert (event["by"], event["source"]) == ("ops", "f:9")
    assert event["meta"] == {"import": {"attribute": "rel/worked-with", "relation_type": "worked with"},
                             "meta": {"ticket": 7}}


@pytest.mark.parametrize("record, reason", [
    ([1, 2], "the line is not a JSON object"),
    ({"type": "relation", "from": "a", "to": "b", "relationType": "  "}, "relationType is empty"),
    ({"type": "entity", "name": "fgraph/x", "entityType": "t"}, "looks like an attribute name"),
])
def test_a_line_of_another_shape_is_a_bad_record(record, reason):
    with pytest.raises(BadRecord, match=reason):
        IMPORTER.event(record, CONTEXT, 1)


def test_it_declares_its_name_and_mirror():
    assert (IMPORTER.name, IMPORTER.line_based, IMPORTER.options) == ("mcp-memory", True, frozenset({"mirror"}))
