"""Replication through NATS JetStream, live (issue 48): latency writer → central and throughput.

A publisher (`fgraph sync --from w.db --to URL --follow`) and a consumer (`fgraph sync --from URL
--to central.db --follow`), both polling every --interval seconds, run against either one
`nats-server -js` (an R1 stream) or a 3-node cluster on loopback (an R3 stream; the publisher
talks to node 0, the consumer to node 1). Then:

  latency     the writer commits one transaction, and the time until the central holds it is
              measured; the next commit follows its arrival; --commits of them: median and p99
  throughput  --sources stores of --events transactions each (benchmarks/common.py's mix) are
              published by one one-shot `fgraph sync`, the consumer already following: events/s
              from the publisher's start until the central has them all

One line per figure, each with the command that reproduces it:

    .venv/bin/python benchmarks/replication.py [--topology single|cluster|both] [--commits 200]
        [--sources 3] [--events 1000] [--interval 0.01]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, build_store, fgraph_executable, rate

import fgraph

TIMEOUT = 120.0   # seconds any one wait may take before the benchmark gives up, saying what it waited for


def wait(condition, what, timeout: float = TIMEOUT, step: float = 0.001) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            sys.exit(f"benchmark: timed out after {timeout:.0f} s waiting for {what() if callable(what) else what}")
        time.sleep(step)


class Engine:
    """One `nats-server -js` or a 3-node cluster (tests/support/nats.py), with a stream on it."""

    def __init__(self, topology: str, root: Path):
        sys.path.insert(0, REPO)
        from tests.support.nats import Cluster, NatsServer
        self.topology = topology
        if topology == "single":
            self.nodes = [NatsServer(root).start()]
            self.stop = self.nodes[0].stop
        else:
            cluster = Cluster(root).start()
            self.nodes, self.stop = cluster.nodes, cluster.stop

    def urls(self, stream: str) -> tuple[str, str]:
        """(the publisher's URL, the consumer's URL)."""
        return f"{self.nodes[0].url}/{stream}", f"{self.nodes[-1 if len(self.nodes) == 1 else 1].url}/{stream}"

    def create(self, exe: str, empty: str, stream: str) -> None:
        replicas = "3" if self.topology == "cluster" else "1"
        argv = [exe, "sync", "--from", empty, "--to", self.urls(stream)[0], "--create-stream", "--replicas", replicas]
        failed = []

        def created() -> bool:
            proc = subprocess.run(argv, capture_output=True)
            failed[:] = [proc.stderr.decode().strip()]
            return proc.returncode == 0
        wait(created, lambda: f"stream {stream} to be placed ({failed[-1]})", step=0.2)


def transactions(db) -> int:
    return db.stats()["transactions"]


def follow(exe: str, *argv: str, interval: float) -> subprocess.Popen:
    return subprocess.Popen([exe, "sync", *argv, "--follow", "--interval", str(interval)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    if proc.returncode not in (0, -15):
        print(f"benchmark: a follower ended with {proc.returncode}: {err.decode()[-500:]}", file=sys.stderr)


def latency(exe: str, engine: Engine, tmp: Path, commits: int, interval: float) -> list[float]:
    """Seconds from each commit to the writer's store until the central holds it."""
    writer, central, empty = tmp / "w.db", tmp / "lat-central.db", tmp / "empty.db"
    engine.create(exe, str(empty), "LAT")
    pub_url, con_url = engine.urls("LAT")
    with fgraph.connect(str(writer)) as db:
        db.transact({"id": "w-0", "item/v": 0})
    procs = [follow(exe, "--from", str(writer), "--to", pub_url, interval=interval),
             follow(exe, "--from", con_url, "--to", str(central), interval=interval)]
    seconds = []
    try:
        first = _count(writer)   # its own genesis and the writer's events (a genesis is not published)
        wait(lambda: central.exists() and _count(central) >= first, "the central to hold the writer's first events")
        with fgraph.connect(str(writer)) as source, fgraph.connect(str(central), read_only=True) as target:
            for i in range(1, commits + 1):
                before = transactions(target)
                start = time.perf_counter()
                source.transact({"id": f"w-{i % 10}", "item/v": i})
                wait(lambda: transactions(target) > before, f"commit {i} to reach the central")
                seconds.append(time.perf_counter() - start)
                for proc in procs:
                    if proc.poll() is not None:
                        sys.exit(f"benchmark: a follower died: {proc.stderr.read().decode()[-500:]}")
    finally:
        for proc in procs:
            stop(proc)
    return seconds


def _count(path: Path) -> int:
    try:
        with fgraph.connect(str(path), read_only=True) as db:
            return transactions(db)
    except fgraph.FgraphError:
        return 0


def throughput(exe: str, engine: Engine, tmp: Path, sources: list[str], interval: float) -> tuple[int, float]:
    """(events, seconds) from starting a one-shot publisher of ``sources`` until a following consumer has them."""
    central, empty = tmp / "thr-central.db", tmp / "empty.db"
    engine.create(exe, str(empty), "THR")
    pub_url, con_url = engine.urls("THR")
    wanted = sum(_count(Path(s)) - 1 for s in sources)   # a store's genesis is not published
    consumer = follow(exe, "--from", con_url, "--to", str(central), interval=interval)
    try:
        base = 1   # its own genesis (the empty store that created the stream published nothing)
        wait(lambda: central.exists() and _count(central) >= base, "the consumer to create the central")
        start = time.perf_counter()
        froms = [a for s in sources for a in ("--from", s)]
        publisher = subprocess.run([exe, "sync", *froms, "--to", pub_url], capture_output=True)
        if publisher.returncode != 0:
            sys.exit(f"benchmark: the publisher failed: {publisher.stderr.decode()[-500:]}")
        with fgraph.connect(str(central), read_only=True) as target:
            wait(lambda: transactions(target) - base >= wanted, "the central to hold every published event",
                 step=0.005)
        return wanted, time.perf_counter() - start
    finally:
        stop(consumer)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topology", choices=("single", "cluster", "both"), default="both")
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--sources", type=int, default=3)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=0.01)
    args = parser.parse_args()
    exe = fgraph_executable()
    topologies = ("single", "cluster") if args.topology == "both" else (args.topology,)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sources = []
        for i in range(args.sources):
            path = str(tmp / f"s{i}.db")
            build_store(path, args.events, seed=11 + i)
            sources.append(path)
        for topology in topologies:
            root = tmp / topology
            root.mkdir()
            subprocess.run([exe, "--db", str(root / "empty.db"), "init"], check=True, capture_output=True)
            engine = Engine(topology, root)
            try:
                lat = latency(exe, engine, root, args.commits, args.interval)
                events, seconds = throughput(exe, engine, root, sources, args.interval)
            finally:
                engine.stop()
            command = (f".venv/bin/python benchmarks/replication.py --topology {topology} --commits {args.commits} "
                       f"--sources {args.sources} --events {args.events} --interval {args.interval}")
            where = "1 server, R1" if topology == "single" else "3-node cluster, R3"
            print(f"latency writer->central ({where}): median {statistics.median(lat) * 1000:.1f} ms, "
                  f"p99 {percentile(lat, 0.99) * 1000:.1f} ms over {len(lat)} commits  [{command}]")
            print(f"throughput writer->central ({where}): {rate(events, seconds):.0f} events/s "
                  f"({events} events in {seconds:.2f} s)  [{command}]")


if __name__ == "__main__":
    main()
