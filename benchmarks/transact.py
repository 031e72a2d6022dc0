"""Write throughput: fgraph transactions against the raw-APSW cost of the same rows.

Builds N small transactions (3–5 facts each: text, int, float, a ref, sometimes a
card-one replacement), runs them through ``fgraph.connect().transact`` and, in the
same run, inserts the same fact rows with plain APSW in the same number of
transactions under the same pragmas (WAL, synchronous=FULL). Prints both rates
and their ratio; the target is fgraph ≥ 50 % of raw APSW.

    .venv/bin/python benchmarks/transact.py [--transactions 10000]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time

import apsw

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fgraph  # noqa: E402
from fgraph import layout  # noqa: E402


def workload(count: int, seed: int = 7) -> list:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        person = f"person-{rng.randrange(count // 2 + 1)}"
        m = {"id": person, "person/name": f"Name {i}", "person/age": rng.randrange(100)}
        if rng.random() < 0.7:
            m["person/score"] = rng.random() * 100
        if rng.random() < 0.5:
            m["person/knows"] = {"ref": f"person-{rng.randrange(count // 2 + 1)}"}
        out.append(m)
    return out


def run_fgraph(path: str, transactions: list) -> tuple[float, int]:
    db = fgraph.connect(path)
    facts = 0
    start = time.perf_counter()
    for data in transactions:
        report = db.transact(data)
        facts += len(report["asserted"])
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed, facts


def run_raw(path: str, transactions: list) -> float:
    conn = apsw.Connection(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    # The same rows go into the same table: format v2's fgraph_facts with its six indexes.
    conn.execute(layout.ddl_text())
    ids: dict[str, int] = {}
    start = time.perf_counter()
    for tx, data in enumerate(transactions, start=1000):
        conn.execute("BEGIN IMMEDIATE")
        rows = [(tx, 1, tx, 5, tx)]
        e = ids.setdefault(data["id"], len(ids) + 100)
        for key, value in data.items():
            if key == "id":
                continue
            a = ids.setdefault(key, len(ids) + 100)
            if isinstance(value, dict):
                value = ids.setdefault(value["ref"], len(ids) + 100)
            rows.append((e, a, value, 2, tx))
        conn.executemany("INSERT OR IGNORE INTO fgraph_facts (e, a, v, t, tx) VALUES (?, ?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=10000)
    args = parser.parse_args()
    transactions = workload(args.transactions)
    with tempfile.TemporaryDirectory() as tmp:
        fg_time, facts = run_fgraph(os.path.join(tmp, "fgraph.db"), transactions)
        raw_time = run_raw(os.path.join(tmp, "raw.db"), transactions)
    n = len(transactions)
    fg_rate, raw_rate = n / fg_time, n / raw_time
    print(f"transactions: {n}  facts written by fgraph: {facts}")
    print(f"fgraph:   {fg_rate:10.1f} tx/s  ({fg_time:.2f} s)")
    print(f"raw apsw: {raw_rate:10.1f} tx/s  ({raw_time:.2f} s)")
    print(f"ratio fgraph/raw: {fg_rate / raw_rate:.2f}  (target >= 0.50)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
