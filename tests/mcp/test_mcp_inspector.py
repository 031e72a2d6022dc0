"""The official MCP Inspector (npm ``@modelcontextprotocol/inspector``, command-line mode) lists
our tools and calls ``about`` and ``history`` against ``fgraph mcp`` (issue 14 item 6).

The Inspector is installed once into ~/.cache/fgraph-tests/inspector; where npm is missing or
cannot fetch it, the test is skipped with the reason printed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fgraph-tests" / "inspector"
OURS = str(Path(sys.executable).parent / "fgraph")


def inspector() -> str:
    binary = CACHE / "node_modules" / ".bin" / "mcp-inspector"
    if binary.exists():
        return str(binary)
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: cannot fetch @modelcontextprotocol/inspector")
    CACHE.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(CACHE),
                           "@modelcontextprotocol/inspector"], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not binary.exists():
        reason = f"npm could not fetch @modelcontextprotocol/inspector: {proc.stderr.strip()[-300:]}"
        print(reason)
        pytest.skip(reason)
    return str(binary)


def run(path, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_")}
    proc = subprocess.run([inspector(), "--cli", OURS, "--db", str(path), "mcp", *args], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "i.db"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "ada", "person/name": "Ada", "person/born": 1815})
        db.transact({"id": "ada", "person/born": 1816})
    return path


def test_the_inspector_lists_our_tools(store):
    tools = run(store, "--method", "tools/list")["tools"]
    assert [t["name"] for t in tools][:4] == ["recall", "about", "why", "history"]
    assert all(t["annotations"]["readOnlyHint"] for t in tools)


def test_the_inspector_calls_about_and_history(store):
    about = run(store, "--method", "tools/call", "--tool-name", "about", "--tool-arg", "entity=ada")
    assert about["isError"] is False and about["structuredContent"]["data"] == {"person/born": 1816,
                                                                                "person/name": "Ada"}
    history = run(store, "--method", "tools/call", "--tool-name", "history", "--tool-arg", "entity=ada",
                  "--tool-arg", "attribute=person/born")
    items = history["structuredContent"]["data"]["items"]
    assert [item["v"] for item in items] == [1815, 1816] and items[0]["rx"] is not None
