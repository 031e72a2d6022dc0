"""Apply, restore, backup and doctor against this machine's own yardsticks (issue 17), in one run.

For each size (default 10,000 and 100,000 events) it builds a store, then measures, each fgraph
command in its own process (wall seconds and that process's peak RSS):

  apply    `fgraph apply` of the store's tail into a fresh file   vs  a raw APSW import of the
           same rows (ids, events, facts, blobs, meta and the FTS rows) in one transaction
  restore  `fgraph restore` of the store's snapshot               vs  our own `fgraph snapshot`
           (both as MB/s of snapshot text)
  backup   `fgraph backup` (copy + full verification + digest)    vs  `PRAGMA integrity_check`
  doctor   `fgraph doctor`                                        vs  `PRAGMA integrity_check`

and prints each figure with its ratio and the target of issue 17. Beside the first two, a second
yardstick (issue 52): the floor of `apply` and `restore` — the very SQL statements our writer issues
for that stream (captured once through an APSW exec trace while applying or restoring it in this
process into a scratch file), grouped by statement text in order of first use and replayed with
one `executemany` each into a fresh store (its own connection set-up), in one transaction, with no
Python planning. apply/floor and restore/floor show the Python we add over the SQLite work the
format requires (targets ≥ 0.5 and ≥ 0.6). The write path's per-transaction
CPU is measured by benchmarks/transact.py (its in-memory split); run that beside this one.

    .venv/bin/python benchmarks/machine.py [--events 10000 100000]
"""

from __future__ import annotations

import argparse
import collections
import os
import tempfile
import time

import apsw

from common import build_store, fgraph, fgraph_executable, run_measured
from fgraph.ops.doctor.physical import register_functions

TARGETS = {"apply": ("ratio >=", 0.33), "restore": ("ratio >=", 0.5), "backup": ("x <=", 2.5),
           "doctor": ("x <=", 2.0), "apply/floor": ("ratio >=", 0.5), "restore/floor": ("ratio >=", 0.6)}
TRANSACTION_WORDS = ("BEGIN", "COMMIT", "ROLLBACK", "END", "SAVEPOINT", "RELEASE")
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


def fresh(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def capture_statements(kind: str, stream: str, scratch: str) -> list:
    """Every statement ``apply`` or ``restore`` of ``stream`` runs on its connection, in process, into
    a fresh ``scratch`` store (an APSW exec trace sees each row of an ``executemany`` too), as steps
    ``(statement text, [bindings, ...])`` to replay with one ``executemany`` each: consecutive runs of
    one write; between two writes, the reads grouped by text (they see the same state in any order).
    Every statement thus sees the state it saw; transaction control is left out."""
    fresh(scratch)
    steps: list = []
    reads: dict = {}

    def trace(_cursor, sql, bindings):
        head = sql.lstrip()[:9].upper()
        if head.startswith(TRANSACTION_WORDS):
            return True
        bindings = () if bindings is None else bindings
        if head.startswith(("SELECT", "WITH")):
            reads.setdefault(sql, []).append(bindings)
            return True
        if reads:
            steps.extend(reads.items())
            reads.clear()
        elif steps and steps[-1][0] == sql:
            steps[-1][1].append(bindings)
            return True
        steps.append((sql, [bindings]))
        return True

    db = fgraph.connect(scratch)
    try:
        db.connection.exec_trace = trace
        with open(stream, "rb") as handle:
            db.apply_summary(handle) if kind == "apply" else db.restore(handle)
        db.connection.exec_trace = None
    finally:
        db.close()
    steps.extend(reads.items())
    return steps


def floor_seconds(steps: list, target: str) -> float:
    """Replay captured statements into a fresh store, one ``executemany`` per step (rows of a SELECT
    read in C), in one transaction; the connection is fgraph's own (same pragmas, and the SQL
    functions of doctor's checks that restore registers), nothing else of fgraph runs."""
    fresh(target)
    db = fgraph.connect(target)
    conn = db.connection
    register_functions(conn)
    try:
        cursor = conn.cursor()
        start = time.perf_counter()
        with conn:
            for sql, bindings in steps:
                collections.deque(cursor.executemany(sql, bindings), maxlen=0)
        return time.perf_counter() - start
    finally:
        db.close()


def same_rows(one: str, other: str) -> bool:
    """The floor wrote what the command wrote (row counts and last ids of every table)."""
    counts = []
    for path in (one, other):
        conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        try:
            counts.append([conn.execute(f"SELECT count(*), max(rowid) FROM {table}").fetchall()
                           for table in (*TABLES, "fgraph_fts")])
        finally:
            conn.close()
    return counts[0] == counts[1]


def floor(kind: str, stream: str, tmp: str, events: int) -> float:
    scratch, target = (os.path.join(tmp, f"{kind}-{name}-{events}.db") for name in ("captured", "floor"))
    steps = capture_statements(kind, stream, scratch)
    seconds = floor_seconds(steps, target)
    statements = sum(len(rows) for _, rows in steps)
    texts = len({sql for sql, _ in steps})
    ok = same_rows(scratch, target)
    print(f"          floor of {kind}: {statements:,} statements of {texts} texts in {len(steps):,} executemany "
          f"calls, replayed in {seconds:.2f} s (rows {'equal' if ok else 'DIFFER'})")
    return seconds


def verdict(name: str, ratio: float) -> str:
    kind, goal = TARGETS[name]
    met = ratio >= goal if kind.startswith("ratio") else ratio <= goal
    return f"target {kind.split()[0]} {kind.split()[1]} {goal}: {'met' if met else 'not met'}"


def measure(events: int, tmp: str, exe: str, keep: str | None = None) -> None:
    source = os.path.join(keep or tmp, f"src-{events}.db")
    built = 0.0
    if keep is None or not os.path.exists(source):
        built = build_store(source, events)
    checkpoint(source)
    size_mb = os.path.getsize(source) / 1e6
    print(f"\n== {events:,} events: store {size_mb:.0f} MB ({f'built in {built:.0f} s' if built else 'kept'})")
    stream, snap = os.path.join(tmp, f"events-{events}.ndjson"), os.path.join(tmp, f"snap-{events}.ndjson")
    run_measured([exe, "--db", source, "tail"], stdout=stream)

    raw = raw_import_seconds(source, os.path.join(tmp, f"raw-{events}.db"))
    apply_floor = floor("apply", stream, tmp, events)
    apply = run_measured([exe, "--db", os.path.join(tmp, f"applied-{events}.db"), "apply", stream])
    ratio = raw / apply["seconds"]
    print(f"apply     {apply['seconds']:7.2f} s  {events / apply['seconds']:9,.0f} ev/s  "
          f"peak {apply['peak_rss_mib']:5.0f} MiB | raw import {raw:6.2f} s {events / raw:9,.0f} ev/s | "
          f"ratio {ratio:5.2f}  {verdict('apply', ratio)}")
    ratio = apply_floor / apply["seconds"]
    print(f"          apply/floor {ratio:5.2f} (floor {apply_floor:6.2f} s)  {verdict('apply/floor', ratio)}")

    snapshot = run_measured([exe, "--db", source, "snapshot"], stdout=snap)
    snap_mb = os.path.getsize(snap) / 1e6
    restore_floor = floor("restore", snap, tmp, events)
    restore = run_measured([exe, "--db", os.path.join(tmp, f"restored-{events}.db"), "restore", snap])
    ratio = snapshot["seconds"] / restore["seconds"]
    print(f"restore   {restore['seconds']:7.2f} s  {snap_mb / restore['seconds']:7.1f} MB/s  "
          f"peak {restore['peak_rss_mib']:5.0f} MiB | snapshot {snapshot['seconds']:6.2f} s "
          f"{snap_mb / snapshot['seconds']:5.1f} MB/s peak {snapshot['peak_rss_mib']:4.0f} MiB | "
          f"ratio {ratio:5.2f}  {verdict('restore', ratio)}")
    ratio = restore_floor / restore["seconds"]
    print(f"          restore/floor {ratio:5.2f} (floor {restore_floor:6.2f} s)  {verdict('restore/floor', ratio)}")

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
    parser.add_argument("--keep", metavar="DIR", help="build each store once in DIR and reuse it (before/after runs)")
    args = parser.parse_args()
    exe = fgraph_executable()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for events in args.events:
            measure(events, tmp, exe, args.keep)


if __name__ == "__main__":
    main()
