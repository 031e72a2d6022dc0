"""Recall past the exact words (issue 50 item 3, decision S2 in docs/search.md): each quirk the
issue found in MCP ``recall`` — stem prefixes matching unrelated words, function words counted as
content, no recency signal, a misspelled key word finding nothing, and ``search --text`` giving
no hint that ``--match fill`` exists."""

from __future__ import annotations

import json

import pytest

import fgraph
from fgraph.mcp.tools import Tools
from fgraph.query.search.words import asks_recency, question_words
from tests.support.cli import run_cli
from tests.support.constants import CONFORMANCE_CLOCK


@pytest.fixture
def db():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as handle:
        handle.declare("service/owner", ref=True)
        handle.transact([
            {"id": "retry", "note/text": "Webhook retries use exponential backoff with jitter"},
            {"id": "rollback", "note/text": "We roll back a bad deploy within ten minutes"},
            {"id": "cert-manager", "service/name": "cert-manager", "service/note": "renews the TLS certificates"},
            {"id": "ledger-lead", "person/name": "Mona Berg", "person/note": "manages the ledger service"},
            {"id": "game", "note/text": "the migration is over, game over"},
            {"id": "redis", "service/name": "Redis", "service/note": "session cache"},
            {"id": "reddit", "service/name": "Reddit", "service/note": "where support questions arrive"},
            {"id": "tenacity", "library/name": "tenacity", "library/note": "retry decorator for python"},
            {"id": "nils", "person/name": "Nils Lindqvist", "person/role": "payments on-call lead"},
            {"id": "refunds", "service/name": "refund flow", "service/owner": {"ref": "nils"}},
        ])
        # the same subject decided twice, weeks apart: the older record's text is the closer match
        handle.transact([{"id": "ledger-old", "decision/text": "Ledger on Postgres"}])
        handle.transact([{"id": "ledger-new", "decision/text": "Ledger moves to Postgres with logical replicas "
                                                              "and a standby"}])
        yield handle


def entities(db, text, k=10, match="entity"):
    return [h["entity"] for h in db.search(text=text, k=k, match=match)["hits"]]


def test_a_short_stem_is_no_prefix_of_unrelated_words(db):
    assert "retry" not in entities(db, "back")                    # "back" is not "backoff"
    assert entities(db, "who manages the ledger")[0] == "ledger-lead"
    assert "cert-manager" not in entities(db, "who manages the ledger")


def test_inflections_and_long_stems_still_meet(db):
    assert "retry" in entities(db, "webhook retry")               # retries
    assert "ledger-lead" in entities(db, "managing ledger")       # manages


@pytest.mark.parametrize("words", [("who", "took", "over", "billing"), ("what", "moved", "away", "from", "kafka"),
                                   ("wer", "ist", "der", "Besitzer"), ("welche", "Entscheidung", "über", "Redis")])
def test_function_words_of_english_and_german_are_not_content(words):
    kept = {w.text for w in question_words(words)}
    assert not kept & {"who", "over", "away", "from", "what", "wer", "ist", "der", "welche", "über"}
    assert kept  # the subject is left


def test_over_alone_does_not_find_an_entity_that_only_holds_over(db):
    assert "game" not in entities(db, "who took over the ledger")


def test_recently_ranks_the_newest_first(db):
    assert entities(db, "ledger postgres")[:2] == ["ledger-old", "ledger-new"]   # the closer text first
    assert entities(db, "ledger postgres recently")[:2] == ["ledger-new", "ledger-old"]
    assert entities(db, "current ledger postgres decision")[0] == "ledger-new"
    assert asks_recency(("what", "is", "the", "latest", "on", "redis")) and not asks_recency(("now",))


def test_recently_reads_an_imported_records_own_time(tmp_path):
    log = tmp_path / "decisions.jsonl"
    records = [("d-new", "2026-05-20T10:00:00Z", "Ledger moves to Postgres with logical replicas and a standby"),
               ("d-old", "2026-03-01T10:00:00Z", "Ledger on Postgres")]   # the newer decision logged first
    log.write_text("".join(json.dumps({"id": i, "type": "decision", "content": {"what": what},
                                       "metadata": {"timestamp": at}}) + "\n" for i, at, what in records))
    path = tmp_path / "memory.db"
    code, _, err = run_cli("import", "jsonl-log", log, db=path)
    assert code == 0, err
    with fgraph.connect(path, read_only=True) as db:
        ranked = [h["entity"] for h in db.search(text="ledger postgres recently", k=2, match="entity")["hits"]]
    assert ranked == ["decision:d-new", "decision:d-old"]   # imported first, but its own time is newer


@pytest.mark.parametrize(("typed", "expected"), [("Reddis", "redis"), ("tenacty", "tenacity"),
                                                 ("Lindqvst", "nils")])
def test_a_misspelled_key_word_finds_what_the_store_spells_right(db, typed, expected):
    assert expected in entities(db, typed, k=3)
    assert expected in [h["entity"] for h in Tools(db).recall(typed, k=5)["data"]["hits"]]  # MCP recall (fill)


def test_typo_tolerance_runs_only_when_the_exact_word_finds_nothing(db):
    assert entities(db, "redis") == ["redis"]            # "reddit" is close, but "redis" was found
    hit = db.search(text="Reddis", k=1, match="entity")["hits"][0]
    assert hit["words"] == {"reddis": "fact"} and "[Redis]" in hit["matched"][0]["snippet"]


def test_search_text_without_hits_points_to_match_fill(tmp_path):
    path = tmp_path / "team.db"
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as handle:
        handle.declare("service/owner", ref=True)
        handle.transact([{"id": "nils", "person/name": "Nils Lindqvist"},
                         {"id": "refunds", "service/name": "refund flow", "service/owner": {"ref": "nils"}}])
    code, out, err = run_cli("search", "--text", "who owns the refund flow?", db=path, json=True)
    assert code == 0 and json.loads(out)["hits"] == [] and out.count("\n") == 1   # stdout: the published answer
    assert "--match fill" in err
    code, out, err = run_cli("search", "--text", "refund flow", db=path, json=True)
    assert code == 0 and json.loads(out)["hits"] and err == ""
    code, out, err = run_cli("search", "--text", "who owns the refund flow?", "--match", "fill", db=path, json=True)
    assert code == 0 and json.loads(out)["hits"] and err == ""
