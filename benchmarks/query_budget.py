"""A budget that bounds time (issue 52 item 4): queries whose clauses share no variable, on ours
and on the published runtime in the same run, each a CLI call in its own process.

Stores of N transactions (one person per transaction gets a ``person/title``, half of them also a
``person/knows``, and one in ten rewrites a counter), so the product the query would examine grows
with N squared. For each store: two disjoint clauses and three at the default budget (100,000
units); two at ``--query-budget 325000`` (on 1,000 transactions its 166,425 units fit: an answer);
the titles beside the counter ("history": two units a title, answered, while the counter's
retracted values share its index range); then, on the largest store, two clauses at growing budgets.
Each time is the best of --repeat runs; "us/unit" is that time less the same runtime's start-up
(a one-datom query) over the units spent (the budget when refused, the query's units when it
fits), in microseconds: flat when time is bounded by the budget and not by the product.

    .venv/bin/python benchmarks/query_budget.py [--sizes 1000 6500 13000 26000] [--budgets 100000 325000 1000000]
        [--repeat 1] [--before DIR]

The peer is FGRAPH_PEER (refpeer, or its fgraph executable); without it only our figures are printed.
--before DIR adds a column: our CLI with that checkout first on PYTHONPATH (a worktree of an older
commit), so before and after are measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from common import RSS_WRAPPER, fgraph, fgraph_executable

TWO = {"find": ["?t"], "where": [["?p", "person/title", "?t"], ["?x", "person/knows", "?q"]]}
THREE = {"find": ["?t"], "where": [["?p", "person/title", "?t"], ["?x", "person/knows", "?q"],
                                   ["?y", "person/title", "?z"]]}
HISTORY = {"find": ["?t", "?v"], "where": [["?p", "person/title", "?t"], ["?c", "counter/value", "?v"]]}
POINT = {"find": ["?t"], "where": [["person-1", "person/title", "?t"]]}


def build(path: str, transactions: int, seed: int = 7) -> tuple[float, int, int]:
    """``transactions`` transactions, each giving a person a title and, one time in two, someone
    they know, and one in ten rewriting a counter; returns the build time and the live titles and
    knows."""
    rng = random.Random(seed)
    people = max(10, transactions // 3)
    start = time.perf_counter()
    with fgraph.connect(path) as db:
        db.connection.execute("PRAGMA synchronous = OFF")
        db.declare("person/knows", type="ref", many=True)
        for i in range(transactions - 1):
            data = {"id": f"person-{rng.randrange(people)}", "person/title": f"Title {i % 500}"}
            if rng.random() < 0.5:
                data["person/knows"] = {"ref": f"person-{rng.randrange(people)}"}
            db.transact([data, {"id": "counter", "counter/value": i}] if i % 10 == 0 else data)
        live = ("SELECT count(*) FROM fgraph_facts f JOIN fgraph_ids i ON f.a = i.id "
                "WHERE i.name = ? AND f.rx IS NULL")
        titles, k = (db.connection.execute(live, [a]).fetchone()[0] for a in ("person/title", "person/knows"))
    return time.perf_counter() - start, titles, k


def peer_argv() -> list | None:
    peer = os.environ.get("FGRAPH_PEER")
    if not peer:
        return None
    if os.path.basename(peer) == "refpeer":
        peer = subprocess.run([peer, "--path"], capture_output=True, text=True, check=True).stdout.strip()
    return [peer]


def timed(argv: list, env: dict, repeat: int) -> dict:
    """Best wall time of ``repeat`` runs, the outcome's first line and the peak RSS."""
    best = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", RSS_WRAPPER, "-", "-", *argv], capture_output=True,
                             env=env, check=True, timeout=3600)
        run = json.loads(out.stdout)
        if best is None or run["seconds"] < best["seconds"]:
            best = run
    first = best["stderr"].strip().split(":", 1)[0] if best["rc"] else "ok"
    return {"seconds": best["seconds"], "outcome": first, "rss": best["peak_rss_mib"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 6500, 13000, 26000])
    parser.add_argument("--budgets", type=int, nargs="+", default=[100_000, 325_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--before", default=None)
    args = parser.parse_args()
    ours_env = dict(os.environ)
    ours_env.pop("PYTHONPATH", None)
    peer_env = dict(ours_env)
    runtimes = [("ours", [fgraph_executable()], ours_env)]
    if args.before:
        runtimes.append(("before", [fgraph_executable()], dict(ours_env, PYTHONPATH=os.path.abspath(args.before))))
    peer = peer_argv()
    if peer:
        runtimes.append(("peer", peer, peer_env))
    with tempfile.TemporaryDirectory(prefix="fgraph-budget-bench-") as tmp:
        stores = {}
        for size in args.sizes:
            path = os.path.join(tmp, f"s{size}.db")
            seconds, titles, knows = build(path, size)
            product = titles + titles * knows
            stores[size] = (path, product, {TWO["where"][1][1]: product, HISTORY["where"][1][1]: 2 * titles})
            print(f"built {size} transactions in {seconds:.1f} s: the two-clause query needs {product:,} units")
        startup = {name: timed([*argv, "--db", stores[args.sizes[0]][0], "q", json.dumps(POINT)], env, 3)
                   for name, argv, env in runtimes}
        print("start-up (one-datom query): " + ", ".join(f"{n} {s['seconds']:.2f} s" for n, s in startup.items()))
        cases = [(size, label, q, budget) for size in args.sizes
                 for label, q, budget in (("2 clauses", TWO, 100_000), ("3 clauses", THREE, 100_000),
                                          ("2 clauses", TWO, 325_000), ("history", HISTORY, 100_000))]
        cases += [(args.sizes[-1], "2 clauses", TWO, b) for b in args.budgets if b not in (100_000, 325_000)]
        print(f"{'store':>7} {'needs units':>13} {'query':10} {'budget':>9} | " +
              " | ".join(f"{n + ' s':>7} {'us/unit':>7} {'MiB':>5} {'outcome':9}" for n, _, _ in runtimes))
        for size, label, q, budget in cases:
            path, product, needs = stores[size]
            cells = []
            for name, argv, env in runtimes:
                run = timed([*argv, "--db", path, "--query-budget", str(budget), "q", json.dumps(q)], env, args.repeat)
                spent = needs.get(q["where"][1][1], budget) if run["outcome"] == "ok" else budget
                per_unit = max(run["seconds"] - startup[name]["seconds"], 0) / spent * 1e6
                cells.append(f"{run['seconds']:7.2f} {per_unit:7.2f} {run['rss']:5.0f} {run['outcome']:9}")
            need = needs.get(q["where"][1][1], product) if q is not THREE else product
            print(f"{size:7} {('>' if q is THREE else '') + f'{need:,}':>13} {label:10} {budget:9,} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
