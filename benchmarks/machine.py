"""Apply, restore, backup and doctor against this machine's own yardsticks (issue 17), in one run.

For each size (default 10,000 and 100,000 events) it builds a store, then measures, each fgraph
command in its own process (wall seconds and that process's peak RSS):

  apply    `fgraph apply` of the store's tail into a fresh file   vs  a raw APSW import of the
           same rows (ids, events, facts, blobs, meta and the FTS rows) in one transaction
  restore  `fgraph restore` of the store's snapshot               vs  our own `fgraph snapshot`
           (both as MB/s of snapshot text)
  backup   `fgraph backup` (copy + full verification + digest)    vs  `PRAGMA integrity_check`
  doctor   `fgraph doctor`                                        vs  `PRAGMA integrity_check`

and prints each figure with its ratio and the target of issue 17. The write path's per-transaction
CPU is measured by benchmarks/transact.py (its in-memory split); run that beside this one.

    .venv/bin/python benchmarks/machine.py [--events 10000 100000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import apsw

from common import build_store, fgraph_executable, run_measured

TARGETS = {"apply": ("ratio >=", 0.33), "restore": ("ratio >=", 0.5), "backup": ("x <=", 2.5),
           "doctor": ("x <=", 2.0)}
TABLES = ("fgraph_meta", "fgraph_ids", "fgraph_events", "fgraph_blobs", "fgraph_facts")


def checkpoint(path: str) -> None:
    conn = apsw.Connection(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def integrity_seconds(path: str) -> float:
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        start = time.perf_counter()
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return time.perf_counter() - start
    finally:
        conn.close()


def raw_import_seconds(source: str, target: str) -> float:
    """The yardstick of apply: the same rows into an empty file of the same schema, one transaction,
    rows read from the source and written with executemany (no planning, no checks)."""
    src = apsw.Connection(f"file:{source}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    dst = apsw.Connection(target)
    try:
        for (sql,) in src.execute("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE "
                                  "'fgraph_fts_%' AND name NOT LIKE 'sqlite_%' ORDER BY type = 'index', rowid"):
            dst.execute(sql)
        dst.execute("PRAGMA journal_mode = WAL")
        start = time.perf_counter()
        with dst:
            for table in TABLES:
                columns = [row[1] for row in src.execute(f"PRAGMA table_info({table})")]
                marks = ", ".join("?" for _ in columns)
                dst.executemany(f"INSERT INTO {table} VALUES ({marks})", src.execute(f"SELECT * FROM {table}"))
            dst.executemany("INSERT INTO fgraph_fts (rowid, text) VALUES (?, ?)",
                            src.execute("SELECT rowid, text FROM fgraph_fts"))
        return time.perf_counter() - start
    finally:
        src.close()
        dst.close()


def verdict(name: str, ratio: float) -> str:
    kind, goal = TARGETS[name]
    met = ratio >= goal if kind.startswith("ratio") else ratio <= goal
    return f"target {kind.split()[0]} {kind.split()[1]} {goal}: {'met' if met else 'not met'}"


def measure(events: int, tmp: str, exe: str) -> None:
    source = os.path.join(tmp, f"src-{events}.db")
    built = build_store(source, events)
    checkpoint(source)
    size_mb = os.path.getsize(source) / 1e6
    print(f"\n== {events:,} events: store {size_mb:.0f} MB (built in {built:.0f} s)")
    stream, snap = os.path.join(tmp, f"events-{events}.ndjson"), os.path.join(tmp, f"snap-{events}.ndjson")
    run_measured([exe, "--db", source, "tail"], stdout=stream)

    raw = raw_import_seconds(source, os.path.join(tmp, f"raw-{events}.db"))
    apply = run_measured([exe, "--db", os.path.join(tmp, f"applied-{events}.db"), "apply", stream])
    ratio = raw / apply["seconds"]
    print(f"apply     {apply['seconds']:7.2f} s  {events / apply['seconds']:9,.0f} ev/s  "
          f"peak {apply['peak_rss_mib']:5.0f} MiB | raw import {raw:6.2f} s {events / raw:9,.0f} ev/s | "
          f"ratio {ratio:5.2f}  {verdict('apply', ratio)}")

    snapshot = run_measured([exe, "--db", source, "snapshot"], stdout=snap)
    snap_mb = os.path.getsize(snap) / 1e6
    restore = run_measured([exe, "--db", os.path.join(tmp, f"restored-{events}.db"), "restore", snap])
    ratio = snapshot["seconds"] / restore["seconds"]
    print(f"restore   {restore['seconds']:7.2f} s  {snap_mb / restore['seconds']:7.1f} MB/s  "
          f"peak {restore['peak_rss_mib']:5.0f} MiB | snapshot {snapshot['seconds']:6.2f} s "
          f"{snap_mb / snapshot['seconds']:5.1f} MB/s peak {snapshot['peak_rss_mib']:4.0f} MiB | "
          f"ratio {ratio:5.2f}  {verdict('restore', ratio)}")

    integrity = min(integrity_seconds(source) for _ in range(2))
    backup = run_measured([exe, "--db", source, "backup", os.path.join(tmp, f"backup-{events}.db")])
    ratio = backup["seconds"] / integrity
    print(f"backup    {backup['seconds']:7.2f} s  peak {backup['peak_rss_mib']:5.0f} MiB | integrity_check "
          f"{integrity:6.2f} s | {ratio:5.2f}x  {verdict('backup', ratio)}")
    doctor = run_measured([exe, "--db", source, "doctor"])
    ratio = doctor["seconds"] / integrity
    print(f"doctor    {doctor['seconds']:7.2f} s  peak {doctor['peak_rss_mib']:5.0f} MiB | integrity_check "
          f"{integrity:6.2f} s | {ratio:5.2f}x  {verdict('doctor', ratio)}")
    for name in os.listdir(tmp):
        if str(events) in name:
            os.remove(os.path.join(tmp, name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    exe = fgraph_executable()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for events in args.events:
            measure(events, tmp, exe)


if __name__ == "__main__":
    main()
