"""The public API and the core carry types a checker can verify (issue 46 item 6): ``mypy`` with
the project's configuration (``[tool.mypy]`` in pyproject.toml: strict on ``fgraph``,
``fgraph.db`` and ``fgraph.core``) finds nothing, and the package says it is typed (PEP 561)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_the_package_is_marked_typed():
    assert (REPO / "fgraph" / "py.typed").is_file()


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (it comes with the `test` extra: pip install -e '.[test]')")
def test_mypy_finds_nothing_in_the_public_api_and_the_core():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
