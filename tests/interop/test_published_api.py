"""Proves issue 13 item 3: tests/scripts/published_api.py, written against the published
library's names (FGraphError, TypeError, TxReport, Result; backup/restore returning None), prints
the same under this runtime and under the published one (FGRAPH_PEER's ``--python``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.peerlib import peer_executable
from tests.support.paths import SCRIPTS

SCRIPT = SCRIPTS / "published_api.py"


def run(python: str) -> str:
    env = dict(os.environ, FGRAPH_EVENT_SEED="published-api")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([python, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_script_runs_here():
    out = run(sys.executable)
    assert "TxReport True False applied" in out and "reports are immutable" in out and "\nNone\nNone\n" in out


def test_the_script_prints_the_same_on_the_published_runtime():
    peer = peer_executable()
    if peer is None:
        pytest.skip("FGRAPH_PEER is not set")
    python = subprocess.run([peer, "--python"], capture_output=True, text=True).stdout.strip()
    if not python:
        pytest.skip("FGRAPH_PEER is not a Python runtime")
    assert run(python) == run(sys.executable)
