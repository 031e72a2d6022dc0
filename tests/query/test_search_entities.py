"""Entity-level matching (decision S1, docs/search.md): words across an entity's facts and the
names it refers to, stems and exact words, the published hits first in ``fill``, each extra hit
marked, bounded work, and the published default untouched."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.query.search.entities import question_words, word_query
from tests.support.constants import CONFORMANCE_CLOCK


@pytest.fixture
def db():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as handle:
        handle.declare("person/maintains", ref=True, many=True)
        handle.declare("decision/references", ref=True, many=True)
        handle.declare("service/maintainers", ref=True, many=True)
        handle.transact([
            {"id": "babbage", "person/name": "Charles Babbage", "person/likes": "Earl Grey tea in the afternoon"},
            {"id": "tea-room", "place/name": "Tea room", "place/note": "on the second floor"},
            {"id": "billing", "service/name": "billing", "service/note": "Invoices and payments"},
            {"id": "dana", "person/name": "Dana Scully", "person/maintains": {"ref": "billing"}},
            {"id": "redis", "service/name": "Redis"},
            {"id": "d1", "decision/text": "Use a queue for emails", "decision/references": {"ref": "redis"}},
            {"id": "d2", "decision/text": "Deploys are verified by a smoke test"},
            {"id": "d3", "decision/text": "Cache sessions in Redis for an hour"},
            {"id": "fgraph", "software/name": "fgraph", "rel/depends_on": {"ref": "sqlite"}},
            {"id": "sqlite", "software/name": "SQLite"},
            {"id": "gateway", "service/name": "gateway", "service/maintainers": {"ref": "babbage"}},
        ])
        yield handle


def hits(db, text, match, k=5):
    return [h["entity"] for h in db.search(text=text, k=k, match=match)["hits"]]


def test_the_published_rule_stays_the_default(db):
    assert hits(db, "babbage tea", "fact") == []
    assert db.search(text="babbage tea")["hits"] == []  # no one fact holds both words
    assert db.search(text="deploy verification")["hits"] == []


@pytest.mark.parametrize(("question", "expected"), [
    ("babbage tea", "babbage"),                  # name and observation in separate facts
    ("deploy verification", "d2"),               # stems: deploys, verified
    ("who maintains billing", "dana"),           # a referred name and an attribute's name
    ("which decisions mention redis", "d3"),     # a fact holding the exact word
    ("what does fgraph depend on", "sqlite"),    # along a ref its attribute names: rel/depends_on
])
def test_entity_matching_finds_what_an_agent_asks(db, question, expected):
    assert expected in hits(db, question, "entity")[:2]  # the answer, or the entity the question names first


def test_a_relation_named_by_a_word_leads_to_the_entity_at_its_other_end(db):
    found = db.search(text="who maintains the gateway", k=2, match="entity")["hits"]
    assert "babbage" in [h["entity"] for h in found]
    babbage = next(h for h in found if h["entity"] == "babbage")
    assert babbage["words"] == {"gateway": "reference", "maintains": "attribute"}


def test_references_by_name_count_half_and_are_said(db):
    result = db.search(text="decisions redis", k=5, match="entity")
    by_entity = {h["entity"]: h for h in result["hits"]}
    assert by_entity["d1"]["words"]["redis"] == "reference" and by_entity["d3"]["words"]["redis"] == "fact"
    assert result["hits"].index(by_entity["d3"]) < result["hits"].index(by_entity["d1"])
    assert by_entity["d1"]["matched"][0]["e"] == "redis"  # the evidence is the name it refers to


def test_fill_puts_the_published_hits_first_then_marked_entity_hits(db):
    published = db.search(text="redis", k=5)["hits"]
    filled = db.search(text="redis", k=5, match="fill")["hits"]
    assert filled[:len(published)] == published and "how" not in published[0]
    extra = filled[len(published):]
    assert extra and all(h["how"] == "entity" and h["words"] for h in extra)
    assert {h["entity"] for h in extra}.isdisjoint({h["entity"] for h in published})
    assert len(db.search(text="redis", k=1, match="fill")["hits"]) == 1


def test_filters_text_attributes_and_expand_still_apply(db):
    only = db.search(text="redis", k=5, match="entity", filters=[["decision/text", "Cache sessions in Redis for an hour"]])
    assert [h["entity"] for h in only["hits"]] == ["d3"]
    names = db.search(text="tea", k=5, match="entity", text_attributes=["place/name"])
    assert [h["entity"] for h in names["hits"]] == ["tea-room"]
    expanded = db.search(text="verified smoke", k=1, match="entity", expand=1)
    assert expanded["hits"][0]["entity"] == "d2" and expanded["expanded"] == []
    assert db.search(text="billing", k=1, match="entity", expand=1)["expanded"][0]["entity"] == "dana"


def test_function_words_are_dropped_unless_they_are_all_there_is():
    assert [w.text for w in question_words(("Which", "decisions", "mention", "Redis"))] == ["decisions", "mention",
                                                                                           "redis"]
    assert [w.text for w in question_words(("who", "is"))] == ["who", "is"]
    assert word_query("deployment") == '"deployment" OR "deploy"*'  # a stem of six letters is a prefix
    assert '"verified"' in word_query("verification") and "*" not in word_query("verification")  # a shorter one is not
    assert word_query("go") == '"go"'


def test_a_bad_match_and_work_over_the_budget_are_typed(db, tmp_path):
    with pytest.raises(fgraph.TypeError, match="match"):
        db.search(text="redis", match="fuzzy")
    path = str(tmp_path / "b.db")
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as small:
        small.transact([{"id": f"n{i}", "note/text": f"shared word number {i}"} for i in range(50)])
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK, query_budget=20) as tight:
        with pytest.raises(fgraph.TooLarge):
            tight.search(text="shared", match="entity")


def test_the_cli_takes_match(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path
    path = str(tmp_path / "c.db")
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as handle:
        handle.transact([{"id": "babbage", "person/name": "Charles Babbage", "person/likes": "tea"}])
    fgraph_exe = str(Path(sys.executable).parent / "fgraph")
    out = subprocess.run([fgraph_exe, "--db", path, "search", "--text", "babbage tea", "--match", "entity"],
                         capture_output=True, text=True, check=True).stdout
    assert [h["entity"] for h in json.loads(out)["hits"]] == ["babbage"]
    default = subprocess.run([fgraph_exe, "--db", path, "search", "--text", "babbage tea"],
                             capture_output=True, text=True, check=True).stdout
    assert json.loads(default)["hits"] == []
    bad = subprocess.run([fgraph_exe, "--db", path, "search", "--text", "x", "--match", "fuzzy"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
