"""``fgraph add`` of many one-record lines against its floor (issue 34 item 5), in one run:

(a) ``fgraph add @file`` of --lines NDJSON lines (one transaction each) into a fresh store, as a
    user runs it (its own process, start-up included);
(b) the floor: a raw APSW loop on a fresh file under the PRAGMAs fgraph opens with (WAL,
    ``synchronous=FULL``, autocheckpoint 1000, foreign keys off, untrusted schema, 5 s busy
    timeout) doing the same number of commits, each one INSERT of an event-sized row (the mean
    ``event_data`` length of (a)'s store) into a table shaped like ``fgraph_events``: what one
    fsynced commit costs on this disk, before any planning, encoding or index upkeep;
(c) the same job in this process through the library behind ``add`` (``ingest.prepare(...)
    .execute(db)``), under ``synchronous=FULL`` and under ``synchronous=OFF``: the second is the
    per-commit Python and SQLite CPU cost with the fsync taken out; (b) under OFF is printed too.

    .venv/bin/python benchmarks/add_floor.py [--lines 20000] [--rounds 1] [--profile N]

The fsync latency of a shared disk drifts by 2-10x within minutes, so each round runs (a) and
(c) in the opposite order of the round before and prints its own table, and then (c) and (b),
FULL and OFF, run again interleaved in chunks of 250 lines: that last ratio is the steady one.

``--profile N`` also prints the cProfile of (c) under FULL on N lines (top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import sys
import tempfile
import time

import apsw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import write_lines, fgraph, fgraph_executable, rate, run_measured  # noqa: E402
from fgraph.bridges.add import ingest  # noqa: E402
from fgraph.core import connection  # noqa: E402


def mean_event_bytes(path: str) -> int:
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    (mean,) = conn.execute("SELECT avg(length(CAST(event_data AS BLOB))) FROM fgraph_events").fetchone()
    conn.close()
    return int(mean)


def _floor_connection(path: str, synchronous: str) -> apsw.Connection:
    """A fresh file under fgraph's connection PRAGMAs (``synchronous`` aside) with one table
    shaped like ``fgraph_events``."""
    conn = apsw.Connection(path)
    connection.set_busy_timeout(conn)
    connection.set_wal_journal(conn)
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    connection.set_wal_autocheckpoint(conn)
    connection.disable_foreign_keys(conn)
    connection.distrust_schema(conn)
    conn.execute("CREATE TABLE events (tx INTEGER NOT NULL PRIMARY KEY, event_hash BLOB NOT NULL, "
                 "event_data TEXT) STRICT")
    return conn


def raw_floor(path: str, commits: int, row_bytes: int, synchronous: str) -> float:
    """Seconds for ``commits`` autocommitted INSERTs of one event-sized row each."""
    conn = _floor_connection(path, synchronous)
    rng = random.Random(3)
    rows = [(64 + i, rng.randbytes(32), "".join(rng.choices("abcdefghij{}:,\" ", k=row_bytes)))
            for i in range(commits)]
    start = time.perf_counter()
    for row in rows:
        conn.execute("INSERT INTO events VALUES (?, ?, ?)", row)
    seconds = time.perf_counter() - start
    conn.close()
    return seconds


def library_add(path: str, data: str, synchronous: str, profile: cProfile.Profile | None = None) -> float:
    """Seconds of the ``add`` job in this process (the library behind the CLI), parse included."""
    with open(data, encoding="utf-8") as f:
        text = f.read()
    with fgraph.connect(path) as db:
        db.connection.execute(f"PRAGMA synchronous = {synchronous}")
        start = time.perf_counter()
        if profile:
            profile.enable()
        ingest.prepare(text).execute(db)
        if profile:
            profile.disable()
        return time.perf_counter() - start


CHUNK = 250


def interleaved(tmp: str, data: str, row_bytes: int) -> dict:
    """Seconds of (c) FULL, (b) FULL, (c) OFF and (b) OFF, run in alternating chunks of CHUNK
    lines so the drift of the disk's fsync latency hits all four alike (as benchmarks/transact.py
    does). Each keeps one store open for the whole run, as ``fgraph add`` does."""
    with open(data, encoding="utf-8") as f:
        lines = f.readlines()
    totals = dict.fromkeys(("lib FULL", "floor FULL", "lib OFF", "floor OFF"), 0.0)
    dbs = {}
    for label, sync in (("lib FULL", "FULL"), ("lib OFF", "OFF")):
        dbs[label] = fgraph.connect(os.path.join(tmp, f"chunks-{sync}.db"))
        dbs[label].connection.execute(f"PRAGMA synchronous = {sync}")
    floors = {"floor FULL": _floor_connection(os.path.join(tmp, "chunks-floor-full.db"), "FULL"),
              "floor OFF": _floor_connection(os.path.join(tmp, "chunks-floor-off.db"), "OFF")}
    rng = random.Random(3)
    tx = 64
    for first in range(0, len(lines), CHUNK):
        text = "".join(lines[first:first + CHUNK])
        rows = [(tx + i, rng.randbytes(32), "x" * row_bytes) for i in range(len(lines[first:first + CHUNK]))]
        tx += len(rows)
        for label in totals:
            start = time.perf_counter()
            if label in dbs:
                ingest.prepare(text).execute(dbs[label])
            else:
                for row in rows:
                    floors[label].execute("INSERT INTO events VALUES (?, ?, ?)", row)
            totals[label] += time.perf_counter() - start
    for handle in (*dbs.values(), *floors.values()):
        handle.close()
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    args = parser.parse_args()
    n = args.lines
    env = dict(os.environ, FGRAPH_CLOCK="1767225600000000", FGRAPH_EVENT_SEED="add-floor")
    with tempfile.TemporaryDirectory(prefix="fgraph-add-floor-", dir=os.environ.get("TMPDIR")) as tmp:
        data = os.path.join(tmp, "lines.ndjson")
        write_lines(data, n)
        row_bytes = None
        for round_number in range(1, args.rounds + 1):
            def fresh(name: str) -> str:
                return os.path.join(tmp, f"{round_number}-{name}.db")

            def cli() -> float:
                nonlocal row_bytes
                path = fresh("cli")
                seconds = run_measured([fgraph_executable(), "--db", path, "add", f"@{data}"], env=env)["seconds"]
                row_bytes = row_bytes or mean_event_bytes(path)
                return seconds

            steps = [("(a) fgraph add @file (CLI, FULL)", cli),
                     ("(b) floor: raw APSW, one INSERT per commit, FULL",
                      lambda: raw_floor(fresh("floor"), n, row_bytes, "FULL")),
                     ("(c) add job in-process, FULL", lambda: library_add(fresh("lib-full"), data, "FULL")),
                     ("(c) add job in-process, synchronous=OFF", lambda: library_add(fresh("lib-off"), data, "OFF")),
                     ("(b) raw APSW loop, synchronous=OFF", lambda: raw_floor(fresh("floor-off"), n, row_bytes, "OFF"))]
            # the fsync cost of this shared disk drifts: alternate the order of (a) and (c)
            # (round 1 starts with (a), which also gives the floor its row size)
            order = steps if round_number % 2 else [steps[2], steps[1], steps[0], steps[3], steps[4]]
            seconds = {label: run() for label, run in order}
            cli_s, floor, lib_full, lib_off, floor_off = (seconds[label] for label, _ in steps)
            print(f"round {round_number}: {n:,} one-record transactions; event rows of {row_bytes} bytes on average")
            print("| run | seconds | tx/s | µs per commit |")
            print("|---|---:|---:|---:|")
            for label, _ in steps:
                print(f"| {label} | {seconds[label]:.2f} | {rate(n, seconds[label]):,.0f} | "
                      f"{seconds[label] / n * 1e6:,.0f} |")
            print(f"add / floor rate: {floor / cli_s:.2f} (CLI), {floor / lib_full:.2f} (in-process); "
                  f"fsync share of add: {(lib_full - lib_off) / n * 1e6:,.0f} µs per commit "
                  f"(floor's: {(floor - floor_off) / n * 1e6:,.0f} µs); add's own CPU: {lib_off / n * 1e6:,.0f} µs\n",
                  flush=True)
        chunks = interleaved(tmp, data, row_bytes)
        print(f"interleaved in chunks of {CHUNK} lines (in-process add job and raw loop, one store each):")
        print("| run | seconds | tx/s | µs per commit |")
        print("|---|---:|---:|---:|")
        for label, seconds in chunks.items():
            print(f"| {label} | {seconds:.2f} | {rate(n, seconds):,.0f} | {seconds / n * 1e6:,.0f} |")
        print(f"add / floor rate: {chunks['floor FULL'] / chunks['lib FULL']:.2f}; fsync share of add "
              f"{(chunks['lib FULL'] - chunks['lib OFF']) / n * 1e6:,.0f} µs per commit, of the floor "
              f"{(chunks['floor FULL'] - chunks['floor OFF']) / n * 1e6:,.0f} µs; add's own CPU "
              f"{chunks['lib OFF'] / n * 1e6:,.0f} µs\n", flush=True)
        if args.profile:
            small = os.path.join(tmp, "profile.ndjson")
            write_lines(small, args.profile, seed=6)
            profile = cProfile.Profile()
            library_add(os.path.join(tmp, "profile.db"), small, "FULL", profile)
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
            print(out.getvalue())


if __name__ == "__main__":
    main()
