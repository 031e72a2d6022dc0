"""Query speed: a fixed set of representative queries on ours and on the published runtime over
the same 100,000-event file, each in its own process (best of --repeat runs, peak RSS of that
process), with per-query ratios and their geometric mean; then the paged and aggregate queries
again on a store a quarter the size, to show their memory does not grow with the store.

    .venv/bin/python benchmarks/query.py [--events 100000] [--repeat 3]

The peer is FGRAPH_PEER (refpeer: its library runs under ``refpeer --python``); without it only
our figures are printed. Both runtimes get the same budget (10^9 units), so no query is cut short.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

from common import fgraph

HERE = os.path.dirname(os.path.abspath(__file__))
CHAIN = 1000
QUERIES = [
    ("point lookup", "q", {"find": ["?a"], "where": [["person-123", "person/age", "?a"]]}),
    ("two-attribute join", "q", {"find": ["?n"], "where": [["?e", "person/status", "vip"], ["?e", "person/name", "?n"]]}),
    ("three-way join + predicate", "q", {"find": ["?e"], "where": [["?c", "city/name", "City 7"],
                                                                   ["?e", "person/city", "?c"],
                                                                   ["?e", "person/age", "?a"], [">", "?a", 90]]}),
    ("negation", "q", {"find": ["?e"], "where": [["?e", "person/city", {"ref": "city-3"}],
                                                 {"not": [["?e", "person/knows", "_"]]}]}),
    ("or", "q", {"find": ["?n"], "where": [["?e", "person/status", "vip"], ["?e", "person/name", "?n"],
                                           {"or": [[["?e", "person/city", {"ref": "city-1"}]],
                                                   [["?e", "person/city", {"ref": "city-2"}]]]}]}),
    ("recursive rule, 1,000-link chain", "q", {
        "find": [["count", "?x"]], "where": [{"rule": ["reach", "?x"]}],
        "rules": [{"head": ["reach", "?x"], "body": [["link-0", "link/next", "?x"]]},
                  {"head": ["reach", "?x"], "body": [{"rule": ["reach", "?m"]}, ["?m", "link/next", "?x"]]}]}),
    ("aggregate over all entities", "q", {"find": [["count", "?e"], ["avg", "?a"], ["max", "?a"]],
                                          "where": [["?e", "person/age", "?a"]]}),
    ("order + limit top-10", "q", {"find": ["?e", "?a"], "where": [["?e", "person/age", "?a"]],
                                   "order": [["?a", "desc"], ["?e", "asc"]], "limit": 10}),
    ("pull with a reverse attribute", "q", {"find": [["pull", "?c", ["city/name", "person/_city"]]],
                                            "where": [["?c", "city/name", "City 7"]]}),
    ("datoms walk, 10,000 datoms", "walk", {"index": "avet", "components": ["person/age"], "pages": 10,
                                            "limit": 1000}),
]
FLAT = ("aggregate over all entities", "datoms walk, 10,000 datoms")


def build(path: str, events: int, seed: int = 7) -> float:
    """``events`` transactions: 50 cities, a 1,000-link chain, then one person per transaction."""
    rng = random.Random(seed)
    people = max(100, events // 3)
    start = time.perf_counter()
    with fgraph.connect(path) as db:
        db.connection.execute("PRAGMA synchronous = OFF")
        db.declare("person/city", type="ref")
        db.declare("person/knows", type="ref")
        db.declare("link/next", type="ref")
        db.transact([{"id": f"city-{i}", "city/name": f"City {i}"} for i in range(50)])
        db.transact([{"id": f"link-{i}", "link/next": {"ref": f"link-{i + 1}"}} for i in range(CHAIN)])
        for i in range(events - 5):
            data = {"id": f"person-{rng.randrange(people)}", "person/name": f"Person {i}",
                    "person/age": rng.randrange(100), "person/city": {"ref": f"city-{rng.randrange(50)}"},
                    "person/status": "vip" if rng.random() < 0.01 else "member"}
            if rng.random() < 0.4:
                data["person/knows"] = {"ref": f"person-{rng.randrange(people)}"}
            db.transact(data)
    return time.perf_counter() - start


def measure(python: str, path: str, kind: str, spec, repeat: int) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    out = subprocess.run([python, os.path.join(HERE, "query_runner.py"), path, kind, json.dumps(spec), str(repeat)],
                         capture_output=True, text=True, env=env, timeout=3600)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1][:120]}
    return json.loads(out.stdout)


def peer_python() -> str | None:
    peer = os.environ.get("FGRAPH_PEER")
    if not peer:
        return None
    try:
        return subprocess.run([peer, "--python"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ours_python, theirs_python = sys.executable, peer_python()
    with tempfile.TemporaryDirectory(prefix="fgraph-query-bench-") as tmp:
        big, small = os.path.join(tmp, "big.db"), os.path.join(tmp, "small.db")
        print(f"built {args.events} events in {build(big, args.events):.1f} s; "
              f"{args.events // 4} events in {build(small, args.events // 4):.1f} s")
        print(f"{'query':34} {'ours ms':>10} {'peer ms':>10} {'ratio':>7} {'rows':>6} {'ours MiB':>9} {'peer MiB':>9}")
        ratios = []
        ours_big = {}
        for name, kind, spec in QUERIES:
            ours = measure(ours_python, big, kind, spec, args.repeat)
            ours_big[name] = ours
            theirs = measure(theirs_python, big, kind, spec, args.repeat) if theirs_python else None
            if "error" in ours:
                print(f"{name:34} ours failed: {ours['error']}")
                continue
            line = f"{name:34} {ours['seconds'] * 1000:10.1f}"
            if theirs and "error" not in theirs:
                ratio = theirs["seconds"] / max(ours["seconds"], 1e-9)
                ratios.append(ratio)
                same = "" if theirs["rows"] == ours["rows"] else f"  (rows differ: peer {theirs['rows']})"
                line += (f" {theirs['seconds'] * 1000:10.1f} {ratio:6.1f}x {ours['rows']:6} "
                         f"{ours['peak_rss_mib']:9.1f} {theirs['peak_rss_mib']:9.1f}{same}")
            else:
                note = theirs["error"] if theirs else "no peer"
                line += f" {'-':>10} {'-':>7} {ours['rows']:6} {ours['peak_rss_mib']:9.1f}  ({note})"
            print(line)
        if ratios:
            geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            print(f"peer/ours time: geometric mean {geomean:.1f}x, slowest {min(ratios):.1f}x "
                  f"(targets: >= 3x and no query slower than the peer)")
        for name, kind, spec in QUERIES:
            if name in FLAT:
                small_run = measure(ours_python, small, kind, spec, 1)
                print(f"peak RSS of '{name}': {small_run['peak_rss_mib']:.1f} MiB at {args.events // 4} events, "
                      f"{ours_big[name]['peak_rss_mib']:.1f} MiB at {args.events} events")


if __name__ == "__main__":
    main()
