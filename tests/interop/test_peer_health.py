"""A peer that is named but broken must fail the run, not hide as skipped cross-runtime tests."""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

from tests.support.paths import UPSTREAM

from tests.support.peerlib import peer_executable


def test_the_named_peer_runs():
    peer = peer_executable()
    if peer is None:
        pytest.skip("FGRAPH_PEER is not set: the cross-runtime tests skip with that reason")
    assert os.access(peer, os.X_OK), f"FGRAPH_PEER={peer} is not an executable file"
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([peer, "--db", os.path.join(tmp, "probe.db"), "add", '{"id":"probe","p/n":1}'],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"FGRAPH_PEER={peer} cannot add a fact: {proc.stderr[-2000:]}"
        proc = subprocess.run([peer, "--db", os.path.join(tmp, "probe.db"), "tail"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and '"event/1"' in proc.stdout, f"FGRAPH_PEER={peer} cannot tail: {proc.stderr}"


def test_upstream_fixtures_are_present_beside_a_peer():
    """With a peer beside ../shared, its conformance data must be there too (else upstream cases would
    silently vanish from the run)."""
    if peer_executable() is None:
        pytest.skip("FGRAPH_PEER is not set: upstream cases run only beside ../shared")
    assert UPSTREAM.is_dir(), f"FGRAPH_PEER is set but {UPSTREAM} is missing"
