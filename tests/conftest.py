"""Shared fixtures: deterministic clock and seed, paths to the shared upstream data and the peer."""

from __future__ import annotations

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
UPSTREAM = SHARED / "fixtures" / "upstream"
CONFORMANCE_CLOCK = 1767225600000000
CONFORMANCE_SEED = "fgraph-conformance-v2"


def peer_executable() -> str | None:
    return os.environ.get("FGRAPH_PEER") or None


@pytest.fixture
def deterministic(monkeypatch):
    """The conformance environment of spec 11 §2.3 for library and subprocess calls."""
    monkeypatch.setenv("FGRAPH_CLOCK", str(CONFORMANCE_CLOCK))
    monkeypatch.setenv("FGRAPH_EVENT_SEED", CONFORMANCE_SEED)


def stepping_clock(start: int = CONFORMANCE_CLOCK):
    state = [start - 1_000_000]

    def clock() -> int:
        state[0] += 1_000_000
        return state[0]

    return clock


def requires_upstream():
    return pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/fixtures/upstream is not present")
