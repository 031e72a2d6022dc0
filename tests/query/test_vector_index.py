"""Proves query/search/vector_index.py: with FGRAPH_VECTOR_INDEX=1 vector search answers from an index
beside the database with the exact list's hits, keeps up with new vectors, forgets what the
store forgets (retracted and excised vectors leave the file), and never writes through a link."""

from __future__ import annotations

import os
import random

import pytest

import fgraph
from fgraph.query.search import vector_index

usearch = pytest.importorskip("usearch.index", reason="the vectors extra (usearch) is not installed")

DIMS = 8


def gauss(rng) -> list:
    return [rng.gauss(0, 1) for _ in range(DIMS)]


@pytest.fixture
def store(tmp_path, monkeypatch):
    # The index is approximate (an HNSW graph built on several threads may even leave a node
    # unreachable), so these tests check what fgraph adds — exact scoring of the candidates,
    # freshness, forgetting, files — and recall only loosely; the benchmark measures it.
    monkeypatch.setattr(vector_index, "MIN_VECTORS", 100)
    path = str(tmp_path / "v.db")
    rng = random.Random(7)
    db = fgraph.connect(path)
    db.transact({"id": "n/emb", "fgraph/type": "vector", "fgraph/dims": DIMS})
    for batch in range(6):
        db.transact([{"id": f"n{batch}-{i}", "n/kind": "even" if i % 2 == 0 else "odd",
                      "n/emb": {"vector": gauss(rng)}} for i in range(200)])
    yield db, path, rng
    db.close()


def hits(db, query, **options) -> list:
    return [(hit["entity"], hit["matched"][0]["id"]) for hit in
            db.search(vector=query, vector_attribute="n/emb", k=10, **options)["hits"]]


def attribute_id(db) -> int:
    return db.connection.execute("SELECT id FROM fgraph_ids WHERE name = 'n/emb'").fetchone()[0]


def index_keys(path: str) -> set:
    db = fgraph.connect(path)
    a = db.connection.execute("SELECT id FROM fgraph_ids WHERE name = 'n/emb'").fetchone()[0]
    db.close()
    index = usearch.Index.restore(vector_index.paths(path, a)[0])
    return {int(key) for key in index.keys}


def recall(found: list, exact: list) -> float:
    return sum(len({e for e, _ in a} & {e for e, _ in b}) for a, b in zip(found, exact)) / (10 * len(exact))


def test_indexed_search_finds_the_exact_lists_hits_from_its_files(store, monkeypatch):
    db, path, rng = store
    queries = [gauss(rng) for _ in range(5)]
    exact = [hits(db, q) for q in queries]
    monkeypatch.setenv("FGRAPH_VECTOR_INDEX", "1")
    assert recall([hits(db, q) for q in queries], exact) >= 0.9
    assert sorted(n for n in os.listdir(os.path.dirname(path)) if ".vectors-" in n) == \
        [os.path.basename(p) for p in sorted(vector_index.paths(path, attribute_id(db)))]
    filtered = hits(db, queries[0], filters=[["n/kind", "odd"]])
    assert all(int(entity.rpartition("-")[2]) % 2 == 1 for entity, _ in filtered)
    monkeypatch.delenv("FGRAPH_VECTOR_INDEX")
    assert recall([filtered], [hits(db, queries[0], filters=[["n/kind", "odd"]])]) >= 0.8


def test_new_vectors_are_found_without_rebuilding_the_file(store, monkeypatch):
    db, path, rng = store
    monkeypatch.setenv("FGRAPH_VECTOR_INDEX", "1")
    hits(db, gauss(rng))
    keys = index_keys(path)
    target = gauss(rng)
    db.transact({"id": "late", "n/emb": {"vector": target}})
    assert hits(db, target)[0][0] == "late"
    assert index_keys(path) == keys      # served beside the file, which stays at its basis


@pytest.mark.parametrize("forget", ["retract", "excise"])
def test_a_forgotten_vector_leaves_the_index_at_the_next_search(store, monkeypatch, forget):
    db, path, rng = store
    monkeypatch.setenv("FGRAPH_VECTOR_INDEX", "1")
    hits(db, gauss(rng))
    fact = db.connection.execute("SELECT f.id FROM fgraph_facts f JOIN fgraph_ids i ON i.id = f.e "
                                 "WHERE i.name = 'n0-0' AND f.t = 7 AND f.rx IS NULL").fetchone()[0]
    assert fact in index_keys(path)
    if forget == "retract":
        db.transact(["retract", "n0-0", "n/emb"])
    else:
        db.excise("n0-0")
        assert not any(".vectors-" in name for name in os.listdir(os.path.dirname(path)))   # scrub removed them
    found = hits(db, gauss(rng))
    assert fact not in index_keys(path)
    assert all(entity != "n0-0" for entity, _ in found)


def test_the_index_is_never_read_or_written_through_a_link(store, monkeypatch, tmp_path):
    db, path, rng = store
    a = db.connection.execute("SELECT id FROM fgraph_ids WHERE name = 'n/emb'").fetchone()[0]
    index_path, meta_path = vector_index.paths(path, a)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(victim, index_path)
    query = gauss(rng)
    exact = hits(db, query)
    monkeypatch.setenv("FGRAPH_VECTOR_INDEX", "1")
    assert recall([hits(db, query)], [exact]) >= 0.8   # the index file is a link: built, served from memory, not kept
    assert victim.read_text() == "keep" and os.path.islink(index_path) and not os.path.exists(meta_path)
    os.symlink(victim, meta_path)
    with pytest.raises(fgraph.Conflict, match="symbolic link"):
        hits(db, query)
    assert victim.read_text() == "keep"


def test_the_setting_without_the_extra_says_which_extra_to_install(store, monkeypatch):
    db, path, rng = store
    monkeypatch.setenv("FGRAPH_VECTOR_INDEX", "1")
    monkeypatch.setattr(vector_index, "usearch_module", None)
    monkeypatch.setitem(__import__("sys").modules, "usearch", None)
    with pytest.raises(fgraph.Unsupported, match=r"fgraph\[vectors\]"):
        hits(db, gauss(rng))


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_fifo_or_directory_where_the_index_goes_neither_blocks_nor_is_replaced(store, monkeypatch, kind):
    db, path, rng = store
    index_path = vector_index.paths(path, attribute_id(db))[0]
    os.mkfifo(index_path) if kind == "fifo" else os.mkdir(index_path)
    query = gauss(rng)
    exact = hits(db, query)
    monkeypatch.setenv("FGRAPH_VECTOR_INDEX", "1")
    assert recall([hits(db, query)], [exact]) >= 0.8
    assert (os.path.stat.S_ISFIFO if kind == "fifo" else os.path.stat.S_ISDIR)(os.stat(index_path).st_mode)


def test_few_vectors_are_searched_exactly_without_an_index(store, monkeypatch):
    db, path, rng = store
    monkeypatch.setattr(vector_index, "MIN_VECTORS", 10_000)
    monkeypatch.setenv("FGRAPH_VECTOR_INDEX", "1")
    result = db.search(vector=gauss(rng), vector_attribute="n/emb", k=10)
    assert result["work_used"] == 1200        # every stored vector read
    assert not any(".vectors-" in name for name in os.listdir(os.path.dirname(path)))


def test_with_fewer_candidates_than_vectors_the_list_is_ranked_exactly_and_says_it_left_some_out(store, monkeypatch):
    db, path, rng = store
    monkeypatch.setattr(vector_index, "CANDIDATES", 2)     # 100 of the 1,200 vectors
    queries = [gauss(rng) for _ in range(5)]
    exact = [db.search(vector=q, vector_attribute="n/emb", k=10) for q in queries]
    monkeypatch.setenv("FGRAPH_VECTOR_INDEX", "1")
    indexed = [db.search(vector=q, vector_attribute="n/emb", k=10) for q in queries]
    found = sum(len({h["entity"] for h in a["hits"]} & {h["entity"] for h in b["hits"]}) for a, b in zip(exact, indexed))
    assert found >= 40                                     # recall@10 of at least 0.8 here
    for result in indexed:
        scores = [hit["score"] for hit in result["hits"]]
        assert scores == sorted(scores, reverse=True) and result["work_used"] <= 100
