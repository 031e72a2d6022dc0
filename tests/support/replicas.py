"""What the Litestream tests share (0.3 with a file replica, 0.5 with S3, the litestream-vfs
read replicas): the writer processes that keep a store busy, the lag samples and how to stop a
server or replicator."""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import fgraph

FGRAPH = Path(sys.executable).with_name("fgraph")

# One writer: commits distinct entities until told to stop, reconnecting every `reconnect`
# commits so that fresh opens of the file Litestream is replicating are exercised too.
WRITER = r"""
import os, sys, time
import fgraph
path, name, stop_file = sys.argv[1], sys.argv[2], sys.argv[6]
most, pause, reconnect = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
committed = 0
db = None
while committed < most and not os.path.exists(stop_file):
    if db is None:
        db = fgraph.connect(path)
    db.transact({"id": f"{name}-{committed}", "person/name": f"{name} #{committed}", "person/born": committed})
    committed += 1
    if committed % reconnect == 0:
        db.close()
        db = None
    time.sleep(pause)
if db is not None:
    db.close()
print(committed)
"""


def run_fgraph(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(FGRAPH), *args], capture_output=True, text=True, timeout=60)


class LagSample(NamedTuple):
    lag_s: float      # from the probe commit returning to the end of the first restore holding it
    restore_s: float


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def stop_all(processes: list[subprocess.Popen], stop_file: Path) -> None:
    """Tell the writers to stop (``stop_file``), then stop every process, newest first, and close its pipes."""
    stop_file.touch()
    for process in reversed(processes):
        stop(process)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def describe(samples: list[LagSample]) -> str:
    lags = [sample.lag_s for sample in samples]
    return (f"median {statistics.median(lags):.2f} s, max {max(lags):.2f} s "
            f"({', '.join(f'{sample.lag_s:.2f}' for sample in samples)}; "
            f"restores took up to {max(sample.restore_s for sample in samples):.2f} s)")


def basis_and_remove(scratch: Path) -> int:
    """The last transaction a restored copy holds; the copy (and its sidecars) is removed."""
    try:
        db = fgraph.connect(str(scratch), read_only=True)
        try:
            return db.latest_tx()
        finally:
            db.close()
    finally:
        for path in (scratch, Path(f"{scratch}-wal"), Path(f"{scratch}-shm")):
            path.unlink(missing_ok=True)


def commit_probe(source: Path, name: str) -> int:
    """Commit one entity named ``name`` on the primary; its transaction."""
    db = fgraph.connect(str(source))
    try:
        return db.transact({"id": name, "person/name": name})["tx"]
    finally:
        db.close()


# ------------------------------------------------------------------ litestream: readers that keep following

# Litestream 0.5 with compactions every few seconds instead of every 30 s, so that a reader held
# open for well under a minute lives through several of them (tests/core/test_replica_follow.py).
FAST_COMPACTION = """\
levels:
  - interval: 2s
  - interval: 6s
snapshot:
  interval: 12s
  retention: 30s
l0-retention: 3s
l0-retention-check-interval: 1s
dbs:
  - path: {db}
    monitor-interval: 200ms
    replicas:
      - url: {url}
        sync-interval: 200ms
"""


def fast_compaction_config(directory: Path, db: Path, url: str) -> Path:
    """A litestream.yml replicating ``db`` to ``url`` with fast compaction levels."""
    path = directory / "litestream.yml"
    path.write_text(FAST_COMPACTION.format(db=db, url=url))
    return path


# One long-lived reader of a replica: on each line of stdin it answers one JSON line on stdout, the
# basis and the names it sees, or the typed error it met; "position" answers the follower's counts.
READER = r"""
import json, sys, time
import fgraph
db = fgraph.connect(sys.argv[1], read_only=True)
print(json.dumps({"ready": db.latest_tx()}), flush=True)
for line in sys.stdin:
    if line.strip() == "position":
        print(json.dumps(db.replica_position()), flush=True)
        continue
    started = time.monotonic()
    try:
        view = db.at(db.latest_tx())
        rows = view.q({"find": ["?n"], "where": [["?e", "person/name", "?n"]]})["rows"]
        answer = {"basis": view.latest_tx(), "names": sorted(row[0] for row in rows)}
    except fgraph.FgraphError as exc:
        answer = {"error": type(exc).__name__, "message": str(exc)}
    except Exception as exc:
        answer = {"untyped": type(exc).__name__, "message": str(exc)}
    answer["took_s"] = round(time.monotonic() - started, 3)
    if "basis" in answer:
        where = db.replica_position()
        answer["at"] = {key: where[key] for key in ("litestream_txid", "reopens", "frozen", "behind", "retried")}
    print(json.dumps(answer), flush=True)
"""


def names_at(source: Path, basis: int) -> list[str]:
    """The names a local primary holds at ``basis``: what a replica reporting that basis must answer."""
    with fgraph.connect(str(source), read_only=True) as db:
        rows = db.at(basis).q({"find": ["?n"], "where": [["?e", "person/name", "?n"]]})["rows"]
    return sorted(row[0] for row in rows)


def compaction_files(replica_dir: Path) -> set[str]:
    """The LTX files compaction has written to levels 1 and above of a file replica and not yet removed."""
    found: set[str] = set()
    for level in replica_dir.glob("ltx/*"):
        if level.name not in ("0",):
            found.update(f"{level.name}/{path.name}" for path in level.glob("*.ltx"))
    return found


def free_ports(count: int) -> list[int]:
    """Loopback ports for weed's servers; below 55536 because weed puts gRPC at port + 10000 by default."""
    import socket
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port < 55536 and port not in ports:
            ports.append(port)
    return ports


def start_weed(directory: Path, bucket: str, env: dict, log: Path,
               ports: list[int] | None = None) -> tuple[subprocess.Popen, int, list[int]]:
    """SeaweedFS (``weed mini``) on loopback with one bucket, its data in ``directory/weed``; (process, S3
    port, the ports it took: pass them again to restart it in place) once the S3 port answers."""
    import socket
    import time
    weed = Path(sys.executable).with_name("weed")
    ports = ports or free_ports(10)
    master, volume, filer, s3, admin, *grpc = ports
    (directory / "weed").mkdir(exist_ok=True)
    with open(log, "a") as out:
        process = subprocess.Popen(
            [str(weed), "mini", f"-dir={directory / 'weed'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
             f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}", f"-s3.port={s3}",
             f"-admin.port={admin}", f"-master.port.grpc={grpc[0]}", f"-volume.port.grpc={grpc[1]}",
             f"-filer.port.grpc={grpc[2]}", f"-s3.port.grpc={grpc[3]}", f"-admin.port.grpc={grpc[4]}",
             "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0", f"-bucket={bucket}"],
            env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, f"weed mini exited: {log.read_text()[-2000:]}"
        try:
            with socket.create_connection(("127.0.0.1", s3), timeout=0.5):
                return process, s3, ports
        except OSError:
            if time.monotonic() > deadline:
                stop(process, signal.SIGKILL)
                raise AssertionError(f"weed mini's S3 port did not open: {log.read_text()[-2000:]}") from None
            time.sleep(0.1)
