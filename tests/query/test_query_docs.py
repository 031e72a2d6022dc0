"""Proves every example of docs/query.md, docs/schema.md and docs/search.md: each ```console block of a page
runs, in order, in one fresh directory with this runtime's `fgraph` first on PATH, and prints
exactly what the page shows."""

from __future__ import annotations
from tests.support.paths import DOCS as DOCS_DIR

import os
import re
import subprocess
import sys

import pytest

DOCS = DOCS_DIR
PAGES = ["query.md", "schema.md", "search.md"]
ERRORS = ("NotFound:", "Conflict:", "SchemaError:", "TypeError:", "QueryError:", "FormatError:", "ReadOnly:",
          "TooLarge:", "Unsupported:")
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def examples(text: str):
    """(command, expected output) pairs in page order."""
    pairs = []
    for block in BLOCK.findall(text):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            pairs.append((command, output.rstrip("\n")))
    return pairs


@pytest.mark.parametrize("page", PAGES)
def test_every_example_prints_what_the_page_shows(tmp_path, page):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               FGRAPH_CLOCK="1767225600000000", FGRAPH_EVENT_SEED="docs")
    pairs = examples((DOCS / page).read_text(encoding="utf-8"))
    assert len(pairs) >= 10
    for command, expected in pairs:
        proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert (proc.stdout + proc.stderr).rstrip("\n") == expected, command


@pytest.mark.parametrize("page", PAGES)
def test_the_published_runtime_answers_the_same(tmp_path, page):
    """The page's outputs are the contract's, not only ours: with FGRAPH_PEER set, the same
    commands on the published runtime print the same stdout and the same error names."""
    from tests.support.peerlib import peer_executable
    peer = peer_executable()
    if peer is None:
        pytest.skip("FGRAPH_PEER is not set")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "fgraph").symlink_to(peer)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PATH=str(shim) + os.pathsep + os.environ.get("PATH", ""),
               FGRAPH_CLOCK="1767225600000000", FGRAPH_EVENT_SEED="docs")
    env.pop("PYTHONPATH", None)
    for command, expected in examples((DOCS / page).read_text(encoding="utf-8")):
        proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=work)
        if expected.startswith(ERRORS):
            assert proc.stderr.split(":")[0] == expected.split(":")[0], command
        else:
            assert proc.stdout.rstrip("\n") == expected, command
