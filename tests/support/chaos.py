"""What the cluster chaos family (tests/torture/test_nats_cluster_chaos.py) drives: writer processes
that commit to a store until told to stop, ``fgraph sync --follow`` processes whose stderr goes to
a file (a pipe nobody reads could block them), killed with SIGKILL and run again, and the health
of a stream on a ``Cluster`` (tests/support/nats.py). Every wait is bounded and says what it waited for."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.support.syncing import FGRAPH, KEYS, env, wait_for

WRITER = """
import os, sys, time
import fgraph
path, name, stop, first, pause = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
i = first
with fgraph.connect(path) as db:
    while not os.path.exists(stop):
        db.transact([{"id": f"{name}-{i % KEYS}", "item/v": i, "item/src": name}])
        i += 1
        time.sleep(pause)   # the pace of the traffic, not a wait for anything
print(i - first)
""".replace("KEYS", str(KEYS))


class Writer:
    """A process committing one transaction per record to ``<name>.db`` every ``pause`` seconds
    until ``stop`` is called (it is never killed: it is the application the fleet serves)."""

    def __init__(self, tmp: Path, name: str, first: int, pause: float):
        self.tmp, self.name, self.stop_file = tmp, name, tmp / f"{name}.stop"
        self.proc = subprocess.Popen([sys.executable, "-c", WRITER, f"{name}.db", name, self.stop_file.name,
                                      str(first), str(pause)], cwd=tmp, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env())

    def alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"writer {self.name} died: {self.proc.stderr.read().decode()[-2000:]}")

    def stop(self) -> int:
        """Ask the writer to stop; how many transactions it committed."""
        self.stop_file.touch()
        out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, f"writer {self.name}: {err.decode()[-2000:]}"
        return int(out)


class Follower:
    """One ``fgraph sync ARGS --follow`` process; each run's stderr is kept in its own file."""

    def __init__(self, tmp: Path, label: str, args: list[str]):
        self.tmp, self.label, self.args, self.runs = tmp, label, args, 0
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.runs += 1
        self.err_path = self.tmp / f"{self.label}.{self.runs}.stderr"
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([FGRAPH, "sync", *self.args, "--follow"], cwd=self.tmp,
                                         stdout=subprocess.DEVNULL, stderr=err, env=env())

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def alive(self) -> None:
        """Fails, with what it said, if the process ended by itself."""
        code = self.proc.poll()
        if code is not None:
            raise AssertionError(f"{self.label} (run {self.runs}) exited {code} by itself: {self.stderr()[-3000:]}")

    def kill_and_rerun(self) -> None:
        """SIGKILL it (it must still be running: a sync process rides out the engine) and run it again."""
        self.alive()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        assert "Traceback" not in self.stderr() and "internal error" not in self.stderr(), self.stderr()
        self.start()

    def terminate(self) -> str:
        """SIGTERM it; it must end cleanly (exit 0, nothing untyped said). Its stderr."""
        self.alive()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError(f"{self.label} did not stop within 90 s of SIGTERM: {self.stderr()[-3000:]}") from None
        said = self.stderr()
        assert self.proc.returncode == 0, f"{self.label} ended {self.proc.returncode} on SIGTERM: {said[-3000:]}"
        assert "Traceback" not in said and "internal error" not in said, said
        return said


def events_in(path: Path) -> int:
    """How many events a central holds (its transactions but its genesis); 0 before it exists."""
    import fgraph
    try:
        with fgraph.connect(str(path), read_only=True) as db:
            return db.stats()["transactions"] - 1
    except fgraph.FgraphError:
        return 0


def stream_info(cluster, stream: str) -> dict:
    return cluster.api(f"$JS.API.STREAM.INFO.{stream}")


def healthy(cluster, stream: str) -> bool:
    """Every node runs, the stream has a leader and both its other replicas are current."""
    if any(node.proc is None for node in cluster.nodes):
        return False
    info = stream_info(cluster, stream).get("cluster") or {}
    replicas = info.get("replicas") or []
    return bool(info.get("leader")) and len(replicas) == len(cluster.nodes) - 1 and all(
        r.get("current") and not r.get("offline") for r in replicas)


def wait_healthy(cluster, stream: str, timeout: float = 120) -> None:
    wait_for(lambda: healthy(cluster, stream), timeout, f"stream {stream} to have a leader and every replica current")


def messages(cluster, stream: str) -> int | None:
    """How many messages the stream holds, None when no answer came."""
    return (stream_info(cluster, stream).get("state") or {}).get("messages")
