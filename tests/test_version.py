"""The version is written once (``fgraph/version.py``) and every place that shows it reads it there."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import fgraph
from fgraph import version

REPO = Path(__file__).resolve().parent.parent
FGRAPH = str(Path(sys.executable).parent / "fgraph")


def test_the_package_and_its_metadata_carry_the_one_version():
    assert fgraph.__version__ == version.__version__
    assert importlib.metadata.version("fgraph") == version.__version__
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "fgraph.version.__version__"}


def test_the_cli_prints_it_as_an_option_and_as_a_command():
    for argv in (["--version"], ["version"]):
        out = subprocess.run([FGRAPH, *argv], capture_output=True, text=True, check=True)
        assert (out.stdout, out.stderr) == (version.__version__ + "\n", "")
