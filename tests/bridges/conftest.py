"""Fixtures of the bridge tests, which pytest hands over by name."""

from __future__ import annotations

import pytest

from tests.support.nats import NatsServer


@pytest.fixture
def server(tmp_path):
    """A ``nats-server -js`` of the test's own (tests/support/nats.py), stopped after it."""
    root = tmp_path / "nats"
    root.mkdir()
    srv = NatsServer(root).start()
    yield srv
    srv.stop()
