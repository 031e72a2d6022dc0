"""Vector search at 10,000 → 1,000,000 vectors, exact and with the optional index (issue 34 item 4).

For each size it builds (or reuses, with ``--cache``) a store of that many 64-dimensional
vectors — one entity each, drawn around 1,000 seeded centres so that neighbours exist, as with
real embeddings — then measures, each `fgraph search --vector … --k 10` in its own process
(start-up included; median of ``--runs``, largest peak RSS):

  exact    the default: every stored vector read and scored
  indexed  FGRAPH_VECTOR_INDEX=1 once the index exists (its first build is timed on its own)

and the index's recall@10: for ``--queries`` held-out query vectors, the share of the exact
top-10 entities (numpy over every stored vector, in process) that the indexed search returns.

    cd benchmarks && ../.venv/bin/python vector_index.py --sizes 10000 100000 1000000 --cache /tmp/fgraph-vectors
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy

from common import fgraph_executable, run_measured

import fgraph

DIMS, CENTRES, BATCH = 64, 1000, 2000


def centres() -> numpy.ndarray:
    return numpy.random.default_rng(5).normal(size=(CENTRES, DIMS))


def draws(count: int, seed: int) -> numpy.ndarray:
    rng = numpy.random.default_rng(seed)
    picked = centres()[rng.integers(0, CENTRES, size=count)]
    return (picked + rng.normal(scale=0.35, size=(count, DIMS))).astype(numpy.float32)


def build(path: str, size: int) -> float:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = fgraph.connect(path)
    db.connection.execute("PRAGMA synchronous = OFF")   # benchmark setup only
    db.transact({"id": "v/emb", "fgraph/type": "vector", "fgraph/dims": DIMS})
    start = time.perf_counter()
    vectors = draws(size, 11)
    for first in range(0, size, BATCH):
        db.transact([{"id": f"v{i}", "v/emb": {"vector": vectors[i].tolist()}}
                     for i in range(first, min(first + BATCH, size))])
    db.close()
    return time.perf_counter() - start


def store(cache: str, size: int) -> str:
    path = os.path.join(cache, f"vectors-{size}.db")
    if not os.path.exists(path):
        print(f"building {size:,} vectors ...", flush=True)
        print(f"  built in {build(path, size):.0f} s", flush=True)
    return path


def search_argv(path: str, query) -> list:
    # the budget: an exact search reads every vector, more than the default 100,000 at a million
    return [fgraph_executable(), "--db", path, "--query-budget", str(10 ** 9), "search", "--vector",
            json.dumps([float(x) for x in query]), "--vector-attribute", "v/emb", "--k", "10"]


def timed(path: str, query, indexed: bool, runs: int) -> tuple[float, float]:
    env = {**os.environ, "FGRAPH_VECTOR_INDEX": "1"} if indexed else {k: v for k, v in os.environ.items()
                                                                        if k != "FGRAPH_VECTOR_INDEX"}
    results = [run_measured(search_argv(path, query), env=env) for _ in range(runs)]
    return statistics.median(r["seconds"] for r in results), max(r["peak_rss_mib"] for r in results)


def recall(path: str, queries: numpy.ndarray) -> float:
    """Mean share of the exact top-10 entities the indexed search returns."""
    db = fgraph.connect(path)
    try:
        rows = db.connection.execute("SELECT i.name, b.data FROM fgraph_facts f JOIN fgraph_blobs b ON b.hash = f.v "
                                     "JOIN fgraph_ids i ON i.id = f.e WHERE f.t = 7 AND f.rx IS NULL").fetchall()
        names = [r[0] for r in rows]
        matrix = numpy.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), DIMS).astype(numpy.float64)
        matrix /= numpy.linalg.norm(matrix, axis=1, keepdims=True)
        os.environ["FGRAPH_VECTOR_INDEX"] = "1"
        shares = []
        for query in queries:
            scores = matrix @ (query / numpy.linalg.norm(query))
            truth = {names[i] for i in numpy.argsort(-scores)[:10]}
            found = {hit["entity"] for hit in db.search(vector=query.tolist(), vector_attribute="v/emb", k=10)["hits"]}
            shares.append(len(truth & found) / 10)
        return statistics.mean(shares)
    finally:
        os.environ.pop("FGRAPH_VECTOR_INDEX", None)
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--cache", default=os.environ.get("TMPDIR", "/tmp") + "/fgraph-vectors")
    args = parser.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    queries = draws(args.queries, 99).astype(numpy.float64)
    rows = []
    for size in args.sizes:
        path = store(args.cache, size)
        for name in os.listdir(args.cache):
            if name.startswith(os.path.basename(path) + ".vectors-"):
                os.remove(os.path.join(args.cache, name))
        exact = timed(path, queries[0], False, args.runs)
        start = time.perf_counter()
        run_measured(search_argv(path, queries[0]), env={**os.environ, "FGRAPH_VECTOR_INDEX": "1"})
        first = time.perf_counter() - start
        indexed = timed(path, queries[1], True, args.runs)
        share = recall(path, queries)
        rows.append((size, exact, first, indexed, share))
        print(f"{size:>9,} vectors: exact {exact[0] * 1000:8.1f} ms ({exact[1]:.0f} MiB) | first indexed search "
              f"(builds) {first:7.1f} s | indexed {indexed[0] * 1000:7.1f} ms ({indexed[1]:.0f} MiB) | "
              f"recall@10 {share:.3f}", flush=True)
    base = rows[0]
    print(f"\nratio to {base[0]:,} vectors: exact / indexed")
    for size, exact, _, indexed, _ in rows:
        print(f"{size:>9,}: exact {exact[0] / base[1][0]:5.2f}x   indexed {indexed[0] / base[3][0]:5.2f}x   "
              f"(indexed vs the exact search at {base[0]:,}: {indexed[0] / base[1][0]:5.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
