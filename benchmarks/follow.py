"""tail --follow: delay from another process's commit to the line on stdout, and idle CPU.

A follower process runs `fgraph --db x.db tail --follow`; this script commits N
transactions from its own connection, one every 20 ms, noting when each commit
returned, and reads the follower's stdout, noting when each line arrived. It then
leaves the follower idle for a few seconds and reads its CPU time from /proc.
Same for the peer (FGRAPH_PEER) when set.

    .venv/bin/python benchmarks/follow.py [--commits 200] [--idle 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from common import fgraph, fgraph_executable


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(exe: str, tmp: str, label: str, commits: int, idle: float) -> dict:
    path = os.path.join(tmp, f"{label}.db")
    db = fgraph.connect(path)
    db.transact({"id": "warm", "w/v": 0})
    latest = db.latest_tx()
    follower = subprocess.Popen([exe, "--db", path, "tail", "--follow", "--since", str(latest)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    arrivals: list = []

    def read() -> None:
        for _ in follower.stdout:
            arrivals.append(time.perf_counter())
            if len(arrivals) == commits:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(1.5)  # let the follower start up
    committed = []
    for i in range(commits):
        db.transact({"id": f"e{i}", "w/v": i})
        committed.append(time.perf_counter())
        time.sleep(0.02)
    reader.join(timeout=30)
    db.close()
    cpu_before = cpu_seconds(follower.pid)
    time.sleep(idle)
    idle_cpu = (cpu_seconds(follower.pid) - cpu_before) / idle
    follower.kill()
    follower.wait()
    delays = [(a - c) * 1000 for a, c in zip(arrivals, committed)]
    return {"lines": len(arrivals), "median_ms": statistics.median(delays),
            "p95_ms": sorted(delays)[int(len(delays) * 0.95) - 1], "idle_cpu_percent": idle_cpu * 100}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--idle", type=float, default=5.0)
    args = parser.parse_args()
    runtimes = [("ours", fgraph_executable())]
    if os.environ.get("FGRAPH_PEER"):
        runtimes.append(("peer", os.environ["FGRAPH_PEER"]))
    with tempfile.TemporaryDirectory() as tmp:
        results = {label: measure(exe, tmp, label, args.commits, args.idle) for label, exe in runtimes}
    for label, r in results.items():
        print(f"{label}: {r['lines']} lines, commit-to-line median {r['median_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms,"
              f" idle CPU {r['idle_cpu_percent']:.2f} %  (target median <= 50 ms, idle ~0)")
    if "peer" in results:
        print(f"median latency ratio peer/ours: {results['peer']['median_ms'] / results['ours']['median_ms']:.1f}x")


if __name__ == "__main__":
    sys.exit(main())
