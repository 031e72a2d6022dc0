"""search on the library (spec 13 §2–§9): what the conformance cases cannot say — the result
type, the 1 MiB cap, the work budget, speculation, read-only handles, views — and the exact
tie rule of the vector list against a plain-Python model of the published formula."""

from __future__ import annotations

import math
import random
import struct

import pytest

import fgraph
from fgraph.query.search.render import cap_string, trim_to_cap
from tests.support.constants import CONFORMANCE_CLOCK


@pytest.fixture
def db():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as handle:
        yield handle


def test_the_result_is_an_immutable_mapping_with_attributes(db):
    db.transact({"id": "n", "note/text": "hello world"})
    result = db.search(text="hello")
    assert isinstance(result, fgraph.SearchResult)
    assert list(result) == ["basis_tx", "hits", "expanded", "truncated", "work_used"]
    assert result.hits[0]["entity"] == "n" and result["work_used"] == 1 and result.truncated is False
    assert result == result.to_dict() and type(result.to_dict()) is dict
    assert repr(result).startswith("SearchResult(basis_tx=")
    with pytest.raises(AttributeError):
        result.hits = []
    with pytest.raises(TypeError):
        result["hits"] = []


def test_the_example_of_the_spec_gives_its_result_and_work(db):
    db.declare("note/embedding", type="vector", dims=2)
    db.declare("note/related", ref=True, many=True)
    db.transact({"id": "note-a", "note/embedding": {"vector": [1.0, 0.0]}, "note/kind": "guide",
                 "note/related": {"ref": "note-b"}, "note/text": "small composable tools"})
    db.transact({"id": "note-b", "note/embedding": {"vector": [0.0, 1.0]}, "note/kind": "reference",
                 "note/text": "large integrated framework"})
    result = db.search(text="composable tools", vector=[1.0, 0.0], k=1, expand=1, filters=[["note/kind", "guide"]],
                       vector_attribute="note/embedding")
    assert result["work_used"] == 5 and result["truncated"] is False
    (hit,) = result["hits"]
    assert hit["score"] == 2 / 61 == 0.03278688524590164
    assert [m["a"] for m in hit["matched"]] == ["note/text", "note/embedding"]
    assert hit["matched"][0]["snippet"] == "small [composable] [tools]"
    assert hit["matched"][1]["v"] == {"vector_dims": 2} and hit["matched"][1]["value_truncated"] is True
    assert result["expanded"][0]["entity"] == "note-b" and result["expanded"][0]["via"][0]["a"] == "note/related"
    plain = db.search(text="composable tools", vector=[1.0, 0.0], vector_attribute="note/embedding")
    assert [(h["entity"], h["score"]) for h in plain["hits"]] == [("note-a", 0.03278688524590164),
                                                                  ("note-b", 0.016129032258064516)]
    assert plain["work_used"] == 3


def test_work_equal_to_the_budget_succeeds_and_one_more_is_too_large(tmp_path):
    path = str(tmp_path / "b.db")
    with fgraph.connect(path) as db:
        db.transact([{"id": f"n{i}", "note/text": "needle"} for i in range(3)])
    with fgraph.connect(path, query_budget=3) as db:
        assert db.search(text="needle")["work_used"] == 3
    with fgraph.connect(path, query_budget=2) as db:
        with pytest.raises(fgraph.TooLarge) as caught:
            db.search(text="needle")
    assert caught.value.hint and "budget" in caught.value.message


def test_a_result_over_one_mib_drops_expansion_then_evidence_then_trailing_hits(db):
    db.declare("note/link", ref=True)
    big = "x" * 400_000
    db.transact([{"id": f"h{i}", "note/text": f"needle {i}", "note/blob": big, "note/link": {"ref": "side"}}
                 for i in range(3)] + [{"id": "side", "note/blob": "y" * 10}])
    result = db.search(text="needle", expand=1)
    assert result["truncated"] is True and result["expanded"] == []
    assert [h["entity"] for h in result["hits"]] == ["h0", "h1"]
    assert all(h["matched"] == [] for h in result["hits"])
    assert len(fgraph.core.canonical.dumps_bytes(result.to_dict())) <= 1_048_576


def test_trim_keeps_a_result_that_fits_untouched():
    result = {"basis_tx": 1, "hits": [{"entity": "a", "matched": [{"v": "x"}]}], "expanded": [{"entity": "b"}],
              "truncated": False, "work_used": 1}
    assert trim_to_cap(result) is False and result["expanded"] and result["hits"][0]["matched"]


def test_the_string_cap_keeps_whole_characters():
    assert cap_string("a" * 2048) == ("a" * 2048, False)
    cut, flagged = cap_string("a" * 2049)
    assert flagged and cut == "a" * 2045 + "…" and len(cut.encode()) == 2048
    cut, flagged = cap_string("€" * 700)  # 3 bytes each: 681 fit in 2,045
    assert flagged and cut == "€" * 681 + "…" and len(cut.encode()) == 2046


def test_search_inside_a_speculation_sees_the_speculative_facts(tmp_path):
    with fgraph.connect(str(tmp_path / "s.db")) as db:
        db.transact({"id": "kept", "note/text": "draft kept"})
        with db.speculate():
            db.transact({"id": "maybe", "note/text": "draft maybe"})
            assert {h["entity"] for h in db.search(text="draft")["hits"]} == {"kept", "maybe"}
        assert [h["entity"] for h in db.search(text="draft")["hits"]] == ["kept"]


def test_search_works_on_a_read_only_handle_and_refuses_a_view(tmp_path):
    path = str(tmp_path / "r.db")
    with fgraph.connect(path) as db:
        db.transact({"id": "n", "note/text": "read only"})
    with fgraph.connect(path, read_only=True) as db:
        assert db.search(text="read")["hits"][0]["entity"] == "n"
        with pytest.raises(fgraph.Unsupported):
            db.at(db.latest_tx()).search(text="read")
        with pytest.raises(fgraph.TypeError):  # unknown options are named before the view is refused
            db.at(db.latest_tx()).search(text="read", bogus=1)


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _published_order(query, stored) -> list:
    """The published formula with accurately rounded sums, ties by fact id (insertion order)."""
    q = [_f32(x) for x in query]
    qn = math.sqrt(math.fsum(x * x for x in q))
    scored = []
    for i, v in enumerate(stored):
        vv = math.fsum(x * x for x in v)
        if vv:
            scored.append((-(math.fsum(a * b for a, b in zip(q, v)) / (qn * math.sqrt(vv))), i))
    return [f"e{i}" for _, i in sorted(scored)]


@pytest.mark.parametrize("seed", range(6))
def test_vector_ties_break_by_fact_id_exactly_as_the_published_formula(db, seed):
    """Permutations of one vector against an all-ones query tie exactly, though numpy's sums do
    not; proportional small-integer vectors tie too. The order must be the exact model's."""
    rng = random.Random(seed)
    dims = rng.choice([8, 16, 64])
    db.declare("v/e", type="vector", dims=dims)
    base = [_f32(rng.uniform(-1, 1) * 10 ** rng.randint(-3, 3)) for _ in range(dims)]
    stored = []
    for _ in range(12):
        rng.shuffle(base)
        stored.append(list(base))
    stored += [[m * x for x in [1, 2, 3] * (dims // 3) + [1] * (dims % 3)] for m in (3, 1, 2)]
    stored.append([0.0] * dims)
    db.transact([{"id": f"e{i}", "v/e": {"vector": v}} for i, v in enumerate(stored)])
    for query in ([1.0] * dims, [rng.uniform(-1, 1) for _ in range(dims)]):
        hits = db.search(vector=query, vector_attribute="v/e", k=100)["hits"]
        assert [h["entity"] for h in hits] == _published_order(query, stored)


def test_errors_say_what_to_fix(db):
    for bad in ({"text": "x", "k": 0}, {"vector": [1, 0]}, {"text": "x", "filters": "a/b"}, {}):
        with pytest.raises(fgraph.TypeError) as caught:
            db.search(**bad)
        assert caught.value.message and caught.value.hint
    with pytest.raises(fgraph.NotFound) as caught:
        db.search(text="x", text_attributes=["no/such"])
    assert "no/such" in caught.value.message


@pytest.mark.parametrize("attributes", [(), ("note/text",)])
def test_the_keyword_list_keeps_the_order_and_work_of_one_joined_statement(db, attributes):
    """The list reads the facts of the ranked FTS rows a chunk at a time (issue 34): across
    chunk boundaries, with system and other attributes' rows skipped, it holds the entities and
    charges the work of the single statement that joined every match to its fact."""
    rng = random.Random(4)
    for i in range(400):
        words = " ".join(rng.choice(["alpha", "beta", "gamma"]) for _ in range(rng.randint(1, 6)))
        db.transact({"id": f"n{i}", "note/text": f"{words} alpha",
                     "note/title": "alpha " * rng.randint(1, 3)})
    db.declare("note/kind", doc="alpha documentation, never searched")
    result = db.search(text="alpha", k=100, text_attributes=attributes)
    only = f" AND f.a IN ({','.join('?' * len(attributes))})" if attributes else ""
    ids = [db.connection.execute("SELECT id FROM fgraph_ids WHERE name = ?", (a,)).fetchone()[0]
           for a in attributes]
    rows = db.connection.execute(
        "SELECT f.id, f.e FROM fgraph_fts JOIN fgraph_facts AS f ON f.id = fgraph_fts.rowid "
        f"WHERE fgraph_fts MATCH '\"alpha\"' AND f.a > 63{only} ORDER BY fgraph_fts.rank, fgraph_fts.rowid",
        ids).fetchall()
    seen, expected, work = set(), [], 0
    for _, e in rows:
        work += 1
        if e not in seen:
            seen.add(e)
            expected.append(db.connection.execute("SELECT name FROM fgraph_ids WHERE id = ?", (e,)).fetchone()[0])
    assert [h["entity"] for h in result["hits"]] == expected[:100]
    assert result["work_used"] >= work and len(rows) > 64 * 3
