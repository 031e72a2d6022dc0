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


class FgraphRunner:
    def __init__(self, path: str):
        self.db = fgraph.connect(path)
        self.facts = 0

    def run(self, chunk: list) -> None:
        for data in chunk:
            self.facts += len(self.db.transact(data)["asserted"])

    def close(self) -> None:
        self.db.close()


class RawRunner:
    """Plain APSW: the same fact rows, same table and indexes, same pragmas, no fgraph logic.

    The rows are read back from the fgraph store after each chunk (entity, attribute,
    value, tag and tx exactly as fgraph wrote them) and inserted here one transaction
    per fgraph transaction, so both sides write identical rows into identical indexes.
    """

    def __init__(self, path: str):
        self.conn = apsw.Connection(path)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(layout.ddl_text())

    @staticmethod
    def rows_after(db, after: int) -> list[list[tuple]]:
        """The fact rows fgraph wrote after fact id ``after``, one list per transaction."""
        by_tx: dict[int, list[tuple]] = {}
        for row in db.connection.execute(
                "SELECT e, a, v, t, tx FROM fgraph_facts WHERE id > ? ORDER BY id", (after,)):
            by_tx.setdefault(row[4], []).append(row)
        return list(by_tx.values())

    def run(self, transactions: list[list[tuple]]) -> None:
        conn = self.conn
        for rows in transactions:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR IGNORE INTO fgraph_facts (e, a, v, t, tx) VALUES (?, ?, ?, ?, ?)", rows)
            conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def interleaved(transactions: list, tmp: str, chunk: int = 250) -> tuple[float, float, int]:
    """Alternate chunks between the two writers so machine noise hits both alike."""
    ours, raw = FgraphRunner(os.path.join(tmp, "fgraph.db")), RawRunner(os.path.join(tmp, "raw.db"))
    ours_time = raw_time = ours_cpu = raw_cpu = 0.0
    last_fact = ours.db.connection.execute("SELECT max(id) FROM fgraph_facts").fetchone()[0]
    for i in range(0, len(transactions), chunk):
        part = transactions[i:i + chunk]
        t0, c0 = time.perf_counter(), time.process_time()
        ours.run(part)
        t1, c1 = time.perf_counter(), time.process_time()
        rows = RawRunner.rows_after(ours.db, last_fact)
        last_fact = ours.db.connection.execute("SELECT max(id) FROM fgraph_facts").fetchone()[0]
        t1b, c1b = time.perf_counter(), time.process_time()
        raw.run(rows)
        t2, c2 = time.perf_counter(), time.process_time()
        ours_time += t1 - t0
        raw_time += t2 - t1b
        ours_cpu += c1 - c0
        raw_cpu += c2 - c1b
    facts = ours.facts
    ours.close()
    raw.close()
    return ours_time, raw_time, facts, ours_cpu, raw_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=10000)
    args = parser.parse_args()
    transactions = workload(args.transactions)
    with tempfile.TemporaryDirectory() as tmp:
        fg_time, raw_time, facts, fg_cpu, raw_cpu = interleaved(transactions, tmp)
    n = len(transactions)
    fg_rate, raw_rate = n / fg_time, n / raw_time
    print(f"transactions: {n}  facts written by fgraph: {facts}")
    print(f"fgraph:   {fg_rate:10.1f} tx/s  ({fg_time:.2f} s)")
    print(f"raw apsw: {raw_rate:10.1f} tx/s  ({raw_time:.2f} s)")
    print(f"ratio fgraph/raw: {fg_rate / raw_rate:.2f}  (target >= 0.50)")
    print(f"CPU per transaction: fgraph {fg_cpu / n * 1e6:.0f} us, raw {raw_cpu / n * 1e6:.0f} us"
          " (the rest of the wall time is fsync: synchronous=FULL waits for the disk on every commit)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
