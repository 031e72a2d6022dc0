"""Semantic recall where an embedder is available (issue 50 item 3, decision S2 in
docs/search.md): with an embedder, MCP ``recall`` fuses the keyword, entity-level and vector
lists into one ranking; ``model2vec:FOLDER`` embeds in process through model2vec's real loader
(a tiny model made here, nothing downloaded), ``python -m fgraph.bridges.embed_model`` is an
``--embed-cmd`` of its own, and ``FGRAPH_EMBED_CMD`` configures the embedder."""

from __future__ import annotations

import json
import sys

import pytest

import fgraph
from fgraph.bridges import embed
from fgraph.mcp.tools import Tools
from tests.support.cli import run_cli
from tests.support.constants import CONFORMANCE_CLOCK

np = pytest.importorskip("numpy")
model2vec = pytest.importorskip("model2vec")
tokenizers = pytest.importorskip("tokenizers")

# a static model of four dimensions: words of one meaning share a direction
MEANINGS = {"payouts": 0, "settlements": 0, "refunds": 1, "reimbursement": 1, "nightly": 2, "batched": 3}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")   # a test never downloads a model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    words = ["[PAD]", "[UNK]", *MEANINGS]
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.normalizer = tokenizers.normalizers.Lowercase()
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    vectors = np.zeros((len(words), 4), dtype=np.float32)
    for word, axis in MEANINGS.items():
        vectors[words.index(word), axis] = 1.0
    folder = tmp_path_factory.mktemp("model") / "tiny-static"
    model2vec.StaticModel(vectors, tokenizer, normalize=True).save_pretrained(folder)
    return str(folder)


@pytest.fixture
def memory(model):
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as db:
        tools = Tools(db, embed=lambda text: embed.embed(f"model2vec:{model}", text))
        for n, text in enumerate(["Payouts are batched nightly", "Refunds go back to the original card",
                                  "The on-call rota changes on Mondays"]):
            tools.remember("test", f"op-{n}", text=text)
        db.transact([{"id": "babbage", "person/name": "Charles Babbage"},
                     {"id": "babbage", "person/likes": "Earl Grey tea"}])
        yield db, tools


def texts(db, result):
    return [db.about(h["entity"])["memory/text"] if "memory/text" in h["pull"] else h["entity"]
            for h in result["data"]["hits"]]


def test_the_model_loads_through_model2vecs_own_loader(model):
    assert embed.embed(f"model2vec:{model}", "settlements") == [1.0, 0.0, 0.0, 0.0]
    assert embed.embed(f"model2vec:{model}", "unknown words") == [0.0, 0.0, 0.0, 0.0]


def test_recall_finds_a_paraphrase_that_shares_no_word(memory):
    db, tools = memory
    assert Tools(db).recall("when are settlements sent", k=3)["data"]["hits"] == []   # words alone: nothing
    hits = tools.recall("when are settlements sent", k=3)["data"]["hits"]
    assert hits[0]["pull"]["memory/text"] == "Payouts are batched nightly"
    assert tools.recall("reimbursement", k=1)["data"]["hits"][0]["pull"]["memory/text"].startswith("Refunds")


def test_hybrid_recall_is_one_ranking_of_words_entities_and_vectors(memory):
    db, tools = memory
    hits = tools.recall("babbage tea payouts", k=2)["data"]["hits"]
    # no one fact holds every word and Babbage has no vector: only the entity-level list finds him,
    # and the vector list alone would fill k
    assert hits[0]["pull"]["memory/text"] == "Payouts are batched nightly"   # the vector and the entity lists
    assert hits[1]["entity"] == "babbage" and hits[1]["how"] == "entity"
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert tools.recall("xyzzy unknown", k=3)["data"]["hits"] == []   # an all-zero query vector is no list


def test_words_the_published_rule_finds_in_k_entities_answer_as_the_published_fusion(memory, model):
    """A full answer by the published rule is the published server's (keyword and vector fused), byte
    for byte: no entity-level list in the ranking, scores and work as search --match fact gives them."""
    db, tools = memory
    vector = embed.embed(f"model2vec:{model}", "payouts nightly")
    published = db.search(text="payouts nightly", vector=vector, vector_attribute="memory/embedding", k=1,
                          match="fact")
    assert len(published["hits"]) == 1
    recalled = tools.recall("payouts nightly", k=1)["data"]
    assert recalled == {key: published[key] for key in ("basis_tx", "hits", "expanded", "truncated", "work_used")}
    assert "how" not in recalled["hits"][0]


def test_embed_model_is_an_embed_cmd_of_its_own(model, tmp_path):
    argv = json.dumps([sys.executable, "-m", "fgraph.bridges.embed_model", model])
    assert embed.embed(argv, "payouts nightly") == pytest.approx([0.7071, 0, 0.7071, 0], abs=1e-4)


def test_fgraph_embed_cmd_configures_search_and_a_bad_model_says_what_to_do(model, tmp_path):
    path = tmp_path / "notes.db"
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        db.declare("note/embedding", type="vector", dims=4)
        db.transact([{"id": "p", "note/text": "Payouts are batched nightly", "note/embedding": {"vector": [1, 0, 1, 0]}},
                     {"id": "r", "note/text": "Refunds go back", "note/embedding": {"vector": [0, 1, 0, 0]}}])
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "FGRAPH_EMBED_CMD": f"model2vec:{model}"}
    code, out, err = run_cli("search", "--text", "settlements", "--vector-attribute", "note/embedding",
                             "--k", "1", db=path, json=True, env=env)
    assert code == 0, err
    assert [h["entity"] for h in json.loads(out)["hits"]] == ["p"]
    code, out, err = run_cli("search", "--text", "settlements", "--vector-attribute", "note/embedding",
                             db=path, json=True, env=dict(env, FGRAPH_EMBED_CMD=f"model2vec:{tmp_path}/none"))
    assert code == 1 and out == "" and "could not be loaded" in err and "Traceback" not in err
