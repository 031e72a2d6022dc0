"""tail --follow: delay from another process's commit to the line on stdout, and the follower's CPU.

For each rate (1, 20 and 200 commits/s by default) a follower process runs
`fgraph --db x.db tail --follow` (with `--cursor FILE` too when asked), this script commits at that
rate from its own connection (paced on a schedule, not by sleeping after each commit), noting
when each commit returned, and reads the follower's stdout, noting when each line arrived. It
then leaves the follower idle and reads its CPU time from /proc. The yardstick, measured in the
same run at the same rate, is the delay of a line written to a pipe read by `cat` (the floor any
process-to-process delivery pays on this machine under its current load). One line per figure,
with the load average before and after (the figures mean little on a busy machine).
Same for the published runtime (FGRAPH_PEER) when set, without --cursor.

    .venv/bin/python benchmarks/follow.py [--rates 1,20,200] [--seconds 20] [--idle 5] [--cursor]
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def _reader(stream, count: int, arrivals: list) -> threading.Thread:
    def read() -> None:
        for _ in stream:
            arrivals.append(time.perf_counter())
            if len(arrivals) == count:
                return
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _paced(count: int, rate: float, act) -> list[float]:
    """Call ``act`` ``count`` times at ``rate`` per second; the instants each call returned."""
    done, start = [], time.perf_counter()
    for i in range(count):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        act(i)
        done.append(time.perf_counter())
    return done


def _wait_started(follower, path: str) -> None:
    """The follower prints the warm-up line once it is running: wait for it, never a fixed pause."""
    line = follower.stdout.readline()
    if not line:
        raise SystemExit(f"the follower of {path} ended before its first line")


def measure(exe: str, tmp: str, rate: float, seconds: float, idle: float, cursor: bool) -> dict:
    path = f"{tmp}r{rate:g}{'c' if cursor else ''}.db"
    count = max(10, int(rate * seconds))
    db = fgraph.connect(path)
    db.transact({"id": "warm", "w/v": 0})
    extra = ["--cursor", f"{tmp}r{rate:g}.cursor"] if cursor else []
    follower = subprocess.Popen([exe, "--db", path, "tail", "--follow", "--since", "64", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    _wait_started(follower, path)
    arrivals: list = []
    reader = _reader(follower.stdout, count, arrivals)
    cpu_start = cpu_seconds(follower.pid)
    committed = _paced(count, rate, lambda i: db.transact({"id": f"e{i}", "w/v": i}))
    reader.join(timeout=60)
    busy_cpu = (cpu_seconds(follower.pid) - cpu_start) / (committed[-1] - committed[0] + 1e-9)
    db.close()
    cpu_before = cpu_seconds(follower.pid)
    time.sleep(idle)   # the idle period measured, not a wait for something
    idle_cpu = (cpu_seconds(follower.pid) - cpu_before) / idle
    follower.kill()
    follower.wait()
    delays = [(a - c) * 1000 for a, c in zip(arrivals, committed)]
    return {"lines": len(arrivals), "count": count, "median_ms": statistics.median(delays),
            "p99_ms": percentile(delays, 0.99), "busy_cpu_percent": busy_cpu * 100, "idle_cpu_percent": idle_cpu * 100}


def yardstick(rate: float, seconds: float) -> dict:
    """The delay of a line through a pipe to `cat` and back, at the same rate."""
    count = max(10, int(rate * seconds))
    cat = subprocess.Popen([shutil.which("cat") or "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    arrivals: list = []
    reader = _reader(cat.stdout, count, arrivals)
    sent = _paced(count, rate, lambda i: cat.stdin.write(b"%d\n" % i))
    reader.join(timeout=60)
    cat.stdin.close()
    cat.wait()
    delays = [(a - s) * 1000 for a, s in zip(arrivals, sent)]
    return {"median_ms": statistics.median(delays), "p99_ms": percentile(delays, 0.99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1,20,200", help="commits per second, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long each rate runs (at least 10 commits)")
    parser.add_argument("--idle", type=float, default=5.0)
    parser.add_argument("--cursor", action="store_true", help="follow with --cursor FILE (a checkpoint per batch)")
    args = parser.parse_args()
    runtimes = [("ours", fgraph_executable())]
    if os.environ.get("FGRAPH_PEER") and not args.cursor:   # the published runtime has no --cursor
        runtimes.append(("peer", os.environ["FGRAPH_PEER"]))
    command = f"python benchmarks/follow.py --seconds {args.seconds:g} --idle {args.idle:g}" + \
        (" --cursor" if args.cursor else "")
    print("load average before: %.2f %.2f %.2f on %d CPUs" % (*os.getloadavg(), os.cpu_count()))
    with tempfile.TemporaryDirectory() as tmp:
        for rate in (float(r) for r in args.rates.split(",")):
            y = yardstick(rate, min(args.seconds, 5.0))
            for label, exe in runtimes:
                r = measure(exe, os.path.join(tmp, label) + "-", rate, args.seconds, args.idle, args.cursor)
                how = f"({label}, {r['lines']}/{r['count']} lines; `{command} --rates {rate:g}`)"
                print(f"follow lag at {rate:g} commits/s: median {r['median_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms "
                      f"(pipe yardstick median {y['median_ms']:.2f} ms, p99 {y['p99_ms']:.2f} ms) {how}")
                print(f"follower CPU at {rate:g} commits/s: {r['busy_cpu_percent']:.1f} % while following, "
                      f"{r['idle_cpu_percent']:.2f} % idle over {args.idle:g} s {how}")
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
