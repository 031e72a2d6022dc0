"""The jsonl-log format module: a decision record becomes exactly the event/1 record the importer
has always made (bytes and name-based event UUID pinned), stamped with the record's own time and
author; records of another shape are bad records with the reason; no --mirror (a log only grows)."""

from __future__ import annotations

import pytest

from fgraph.bridges.importers.items import ImportContext
from fgraph.bridges.importers.jsonl_log import IMPORTER
from fgraph.bridges.importers.records import BadRecord
from fgraph.core.canonical import dumps

RECORD = {"id": "d1", "type": "decision", "content": {"what": "use SQLite", "alternatives": ["files"]},
          "entities": ["fgraph"], "relations": [{"from": "fgraph", "to": "SQLite", "type": "stores data in"}],
          "identity": {"user_id": "alice"},
          "metadata": {"timestamp": "2026-03-02T09:15:00Z", "confidence": 0.9, "project": "fgraph"}}
EVENT = (
    '{"asserted":[["decision/id","fgraph/type","text","text"],["decision/id","fgraph/unique",true,"bool"],'
    '["decision:d1","decision/id","d1","text"],["decision/type","fgraph/type","text","text"],'
    '["decision:d1","decision/type","decision","text"],["decision/what","fgraph/type","text","text"],'
    '["decision:d1","decision/what","use SQLite","text"],["decision/alternative","fgraph/type","text","text"],'
    '["decision/alternative","fgraph/many",true,"bool"],["decision:d1","decision/alternative","files","text"],'
    '["decision/at","fgraph/type","instant","text"],'
    '["decision:d1","decision/at",{"instant":"2026-03-02T09:15:00.000000Z"},"instant"],'
    '["decision/confidence","fgraph/type","float","text"],["decision:d1","decision/confidence",0.9,"float"],'
    '["decision/project","fgraph/type","text","text"],["decision:d1","decision/project","fgraph","text"],'
    '["decision/user","fgraph/type","text","text"],["decision:d1","decision/user","alice","text"],'
    '["memory/name","fgraph/type","text","text"],["memory/name","fgraph/unique",true,"bool"],'
    '["fgraph","memory/name","fgraph","text"],["decision/entity","fgraph/type","ref","text"],'
    '["decision/entity","fgraph/many",true,"bool"],["decision:d1","decision/entity",{"ref":"fgraph"},"ref"],'
    '["fgraph","memory/name","fgraph","text"],["SQLite","memory/name","SQLite","text"],'
    '["rel/stores-data-in","fgraph/type","ref","text"],["rel/stores-data-in","fgraph/many",true,"bool"],'
    '["fgraph","rel/stores-data-in",{"ref":"SQLite"},"ref"]],"at":1772442900000000,"by":"alice",'
    '"created":["decision/id","decision:d1","decision/type","decision/what","decision/alternative","decision/at",'
    '"decision/confidence","decision/project","decision/user","memory/name","fgraph","decision/entity","SQLite",'
    '"rel/stores-data-in"],"event":"142703af-97a8-5931-b133-4931ebc415ad","fgraph":"event/1",'
    '"meta":{"folded_relations":[{"attribute":"rel/stores-data-in","relation_type":"stores data in"}],'
    '"identity":{"user_id":"alice"},"meta":{"t":1},'
    '"metadata":{"confidence":0.9,"project":"fgraph","timestamp":"2026-03-02T09:15:00Z"}},"retracted":[],'
    '"source":"d.jsonl:3"}')


def test_a_decision_is_the_same_bytes_as_ever():
    assert dumps(IMPORTER.event(RECORD, ImportContext(at=1, label="d.jsonl", meta={"t": 1}), 3)) == EVENT


def test_the_run_author_stands_in_only_for_a_record_that_names_none():
    anonymous = dict(RECORD, identity={})
    assert IMPORTER.event(anonymous, ImportContext(at=1, label="d", by="ops"), 1)["by"] == "ops"
    assert IMPORTER.event(RECORD, ImportContext(at=1, label="d", by="ops"), 1)["by"] == "alice"


@pytest.mark.parametrize("change, reason", [
    ({"id": " "}, "id is missing or not a non-empty string"),
    ({"metadata": {"timestamp": "yesterday"}}, "is not an RFC 3339 time"),
    ({"metadata": {"timestamp": "2026-03-02T09:15:00Z", "confidence": True}}, "confidence is not a number"),
    ({"relations": {"from": "a"}}, "relations is not an array"),
    ({"entities": ["a/b"]}, "looks like an attribute name"),
])
def test_a_record_of_another_shape_is_a_bad_record(change, reason):
    with pytest.raises(BadRecord, match=reason):
        IMPORTER.event(dict(RECORD, **change), ImportContext(at=1, label="d"), 1)


def test_it_declares_its_name_and_no_mirror():
    assert (IMPORTER.name, IMPORTER.line_based, IMPORTER.options) == ("jsonl-log", True, frozenset())
