"""Search speed: keyword, vector and hybrid ``k=10`` searches (and ``expand=1``) on ours and on
the published runtime over the same 100,000-event store holding 10,000 64-dim vectors, each
in its own process (best of --repeat runs, peak RSS of that process), with per-search ratios;
then in-run yardsticks (the bare FTS5 ranking and a bare numpy cosine over the same vectors)
and the peak RSS of the same searches on a store a quarter the size.

    .venv/bin/python benchmarks/search.py [--events 100000] [--vectors 10000] [--repeat 3]

The peer is FGRAPH_PEER (refpeer: its library runs under ``refpeer --python``); without it only
our figures are printed. Both runtimes get the same budget (10^9 units).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time

import numpy

from common import fgraph
from query import measure, peer_python

DIMS = 64
WORDS = [f"w{i}" for i in range(2000)]


def query_vector(seed: int) -> list:
    rng = random.Random(seed)
    return [round(rng.gauss(0, 1), 4) for _ in range(DIMS)]


SEARCHES = [
    ("keyword, common word", {"text": "w3", "k": 10}),
    ("keyword, two words", {"text": "w5 w40", "k": 10}),
    ("keyword, rare word", {"text": "w1500", "k": 10}),
    ("vector", {"vector": query_vector(1), "vector_attribute": "note/embedding", "k": 10}),
    ("hybrid", {"text": "w5 w40", "vector": query_vector(2), "vector_attribute": "note/embedding", "k": 10}),
    ("hybrid, expand=1", {"text": "w5 w40", "vector": query_vector(3), "vector_attribute": "note/embedding",
                          "k": 10, "expand": 1}),
    ("hybrid + filter", {"text": "w3", "vector": query_vector(4), "vector_attribute": "note/embedding",
                         "k": 10, "filters": [["note/kind", "k1"]]}),
]


def build(path: str, events: int, vectors: int, seed: int = 11) -> float:
    """One note per transaction: 6–20 Zipf-distributed words, a kind, refs to earlier notes;
    every (events/vectors)-th note also has a 64-dim embedding."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    every = max(1, events // max(vectors, 1))
    start = time.perf_counter()
    with fgraph.connect(path) as db:
        db.connection.execute("PRAGMA synchronous = OFF")
        db.declare("note/embedding", type="vector", dims=DIMS)
        db.declare("note/related", ref=True, many=True)
        for i in range(events - 2):
            note = {"id": f"n{i}", "note/text": " ".join(rng.choices(WORDS, weights, k=rng.randint(6, 20))),
                    "note/kind": f"k{rng.randrange(8)}"}
            if i and rng.random() < 0.5:
                note["note/related"] = [{"ref": f"n{rng.randrange(i)}"} for _ in range(rng.randint(1, 3))]
            if i % every == 0 and i // every < vectors:
                note["note/embedding"] = {"vector": [rng.gauss(0, 1) for _ in range(DIMS)]}
            db.transact(note)
    return time.perf_counter() - start


def yardsticks(path: str, searches: list) -> dict:
    """The irreducible work, timed here: the FTS5 ranking the keyword list reads, and one numpy
    cosine over every stored vector already in memory plus the SQLite read of those vectors."""
    import apsw
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    out = {}
    for name, spec in searches:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            if "text" in spec:
                words = " ".join(f'"{w}"' for w in spec["text"].split())
                conn.execute("SELECT rowid FROM fgraph_fts WHERE fgraph_fts MATCH ? ORDER BY rank, rowid",
                             (words,)).fetchall()
            if "vector" in spec:
                blobs = [b for (b,) in conn.execute(
                    "SELECT b.data FROM fgraph_facts AS f JOIN fgraph_blobs AS b ON b.hash = f.v "
                    "WHERE f.t = 7 AND f.rx IS NULL")]
                matrix = numpy.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1).astype(float)
                q = numpy.asarray(spec["vector"], dtype=float)
                numpy.argsort(-(matrix @ q) / numpy.linalg.norm(matrix, axis=1))[:10]
            best = min(best, time.perf_counter() - start)
        out[name] = best
    conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--vectors", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ours_python, theirs_python = sys.executable, peer_python()
    with tempfile.TemporaryDirectory(prefix="fgraph-search-bench-") as tmp:
        big, small = os.path.join(tmp, "big.db"), os.path.join(tmp, "small.db")
        print(f"built {args.events} events with {args.vectors} vectors in "
              f"{build(big, args.events, args.vectors):.1f} s; a quarter of both in "
              f"{build(small, args.events // 4, args.vectors // 4):.1f} s")
        sticks = yardsticks(big, SEARCHES)
        print(f"{'search (k=10)':22} {'ours ms':>9} {'peer ms':>9} {'ratio':>7} {'yardstick ms':>13} "
              f"{'ours/yard':>9} {'hits':>5} {'ours MiB':>9} {'peer MiB':>9} {'MiB at 1/4':>10}")
        ratios = {}
        for name, spec in SEARCHES:
            ours = measure(ours_python, big, "search", spec, args.repeat)
            if "error" in ours:
                print(f"{name:22} ours failed: {ours['error']}")
                continue
            quarter = measure(ours_python, small, "search", spec, 1)
            theirs = measure(theirs_python, big, "search", spec, args.repeat) if theirs_python else None
            line = f"{name:22} {ours['seconds'] * 1000:9.1f}"
            if theirs and "error" not in theirs:
                ratios[name] = theirs["seconds"] / max(ours["seconds"], 1e-9)
                line += f" {theirs['seconds'] * 1000:9.1f} {ratios[name]:6.1f}x"
            else:
                line += f" {'-':>9} {'-':>7}"
            line += (f" {sticks[name] * 1000:13.1f} {ours['seconds'] / sticks[name]:8.1f}x {ours['rows']:5}"
                     f" {ours['peak_rss_mib']:9.1f}")
            line += f" {theirs['peak_rss_mib']:9.1f}" if theirs and "error" not in theirs else f" {'-':>9}"
            print(line + f" {quarter['peak_rss_mib']:10.1f}")
        if ratios:
            geomean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
            vector = ratios.get("vector", 0)
            print(f"peer/ours time: geometric mean {geomean:.1f}x, slowest {min(ratios.values()):.1f}x, "
                  f"vector {vector:.1f}x (targets: never slower, vector >= 5x)")


if __name__ == "__main__":
    main()
