"""backup and doctor on a 1,000,000-fact store, against a plain `cp` + fsync of the same file.

Builds (or reuses, --store) a store of about 1,000,000 facts (250,000 events of 3–5 facts each),
then, each command in its own process:
  cp + fsync        copy the checkpointed file and fsync it (the floor: no consistency, no proof)
  backup            `fgraph --db src backup dest`: one-step online copy, full doctor, digest, fsync, link
  doctor            `fgraph --db dest doctor --json` on the copy
  backup + writer   the same backup while another process commits as fast as it can
and prints seconds, the backup/cp ratio, peak RSS, and for the concurrent run the basis the
copy holds and how many commits the writer made meanwhile.

    .venv/bin/python benchmarks/backup.py [--events 250000] [--store PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from common import REPO, build_store, fgraph_executable, run_measured

WRITER = """
import sys, time, fgraph
db = fgraph.connect(sys.argv[1])
i = 0
while not __import__("os").path.exists(sys.argv[2]):
    db.transact({"id": f"writer-{i % 1000}", "w/n": i, "w/text": "t" * (i % 300)})
    i += 1
print(i)
"""


def checkpoint(path: str) -> None:
    import apsw
    conn = apsw.Connection(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def cp_fsync(src: str, dest: str) -> float:
    start = time.perf_counter()
    shutil.copyfile(src, dest)
    fd = os.open(dest, os.O_RDWR)
    os.fsync(fd)
    os.close(fd)
    dfd = os.open(os.path.dirname(dest), os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)
    return time.perf_counter() - start


def facts_of(path: str) -> int:
    import apsw
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        return conn.execute("SELECT count(*) FROM fgraph_facts").fetchone()[0]
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=250_000)
    parser.add_argument("--store", help="reuse this store instead of building one (it is not modified "
                                        "except by the concurrent-writer run, which works on a copy)")
    args = parser.parse_args()
    exe = fgraph_executable()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        src = os.path.join(tmp, "src.db")
        if args.store:
            checkpoint(args.store)
            shutil.copyfile(args.store, src)
        else:
            built = build_store(src, args.events)
            print(f"built {args.events} events in {built:.0f} s")
        checkpoint(src)
        size_mb = os.path.getsize(src) / 1e6
        print(f"store: {facts_of(src):,} facts, {size_mb:.0f} MB")

        cp_seconds = min(cp_fsync(src, os.path.join(tmp, f"cp{k}.db")) for k in range(2))
        print(f"cp + fsync        {cp_seconds:8.2f} s")

        backup = run_measured([exe, "--db", src, "--json", "backup", os.path.join(tmp, "copy.db")],
                              stdout=os.path.join(tmp, "backup.json"))
        with open(os.path.join(tmp, "backup.json")) as handle:
            proof = json.load(handle)
        print(f"backup            {backup['seconds']:8.2f} s   ratio {backup['seconds'] / cp_seconds:6.1f}x cp   "
              f"peak RSS {backup['peak_rss_mib']:.0f} MiB   basis_tx {proof['basis_tx']}")
        leftovers = [n for n in os.listdir(tmp) if n.startswith(".")]
        print(f"  stray files after backup: {leftovers or 'none'}")

        doctor = run_measured([exe, "--db", os.path.join(tmp, "copy.db"), "doctor", "--json",
                               "--expect-digest", proof["digest"]], stdout=os.path.join(tmp, "doctor.json"))
        with open(os.path.join(tmp, "doctor.json")) as handle:
            report = json.load(handle)
        print(f"doctor            {doctor['seconds']:8.2f} s   peak RSS {doctor['peak_rss_mib']:.0f} MiB   "
              f"ok {report['ok']} (digest proven)")

        stop = os.path.join(tmp, "stop")
        writer = subprocess.Popen([sys.executable, "-c", WRITER, src, stop], cwd=REPO, stdout=subprocess.PIPE,
                                  text=True)
        time.sleep(1.0)
        busy = run_measured([exe, "--db", src, "--json", "backup", os.path.join(tmp, "busy.db")],
                            stdout=os.path.join(tmp, "busy.json"))
        open(stop, "w").close()
        commits = int(writer.communicate(timeout=120)[0])
        with open(os.path.join(tmp, "busy.json")) as handle:
            busy_proof = json.load(handle)
        print(f"backup + writer   {busy['seconds']:8.2f} s   completed, basis_tx {busy_proof['basis_tx']}, "
              f"writer committed {commits} transactions during the run")


if __name__ == "__main__":
    main()
