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
