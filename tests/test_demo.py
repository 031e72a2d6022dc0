"""Proves `make demo` works: the demo script runs end to end against our executable."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_demo_script_runs():
    exe = os.path.join(os.path.dirname(sys.executable), "fgraph")
    proc = subprocess.run(["bash", str(REPO / "docs" / "demo.sh"), exe], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    for needle in ("$ fgraph history ada person/born", "$ fgraph get ada --at", "$ fgraph tx", '"status": "applied"'):
        assert needle in out
