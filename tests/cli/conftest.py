"""Fixtures the CLI tests ask for by name."""

from __future__ import annotations

import pytest

from tests.support.cli import CALL_SETTINGS, DETERMINISTIC


@pytest.fixture
def deterministic_env(monkeypatch):
    """The conformance clock and seed, and none of the settings a CLI call must not inherit."""
    for key, value in DETERMINISTIC.items():
        monkeypatch.setenv(key, value)
    for key in CALL_SETTINGS:
        monkeypatch.delenv(key, raising=False)
