"""Names not found exactly (issue 30 item 2): one entity differing only in case is found when a
face asks loosely, several are not guessed between, and NotFound suggests the nearest names,
at the view's basis and with LIKE's special characters taken literally."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import fgraph
from fgraph.core import name_lookup
from tests.support.constants import CONFORMANCE_CLOCK


@pytest.fixture
def db():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as handle:
        handle.transact([{"id": "Ada Lovelace", "person/born": 1815}, {"id": "Grace Hopper", "person/born": 1906}])
        handle.transact([{"id": "Bob", "person/born": 1}, {"id": "BOB", "person/born": 2}, {"id": "50%_off", "x/y": 1}])
        yield handle


def test_a_loose_name_differs_only_in_case(db):
    assert db.resolve("ada lovelace", loose=True) == db.resolve("Ada Lovelace")
    assert db.resolve("ADA LOVELACE", loose=True) == db.resolve("Ada Lovelace")
    with pytest.raises(fgraph.NotFound):
        db.resolve("ada lovelace")  # the library's exact rule is the default (spec 11)
    with pytest.raises(fgraph.NotFound):
        db.resolve("bob", loose=True)  # two entities differ from it only in case: no guess
    assert db.resolve("Bob", loose=True) != db.resolve("BOB", loose=True)


def test_not_found_suggests_the_nearest_names(db):
    with pytest.raises(fgraph.NotFound) as caught:
        db.entity("ada lovelac")
    assert caught.value.hint.startswith("did you mean 'Ada Lovelace'? ")
    with pytest.raises(fgraph.NotFound) as caught:
        db.entity("zzzz")
    assert "did you mean" not in caught.value.hint


def test_like_specials_are_literal_and_views_see_only_their_names(db):
    conn = db.connection
    assert name_lookup.case_insensitive(conn, "50%_OFF") == db.resolve("50%_off")
    assert name_lookup.case_insensitive(conn, "5%") is None
    assert name_lookup.case_insensitive(conn, "bob", basis=db.latest_tx() - 1) is None
    assert name_lookup.nearest(conn, "Grace", basis=db.latest_tx() - 1) == ["Grace Hopper"]
    assert name_lookup.nearest(conn, "\ud800") == []


def test_the_faces_read_loosely(tmp_path):
    path = str(tmp_path / "f.db")
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as handle:
        handle.transact({"id": "Ada Lovelace", "person/born": 1815})
    exe = str(Path(sys.executable).parent / "fgraph")
    for command in (["get"], ["history"], ["why"]):
        proc = subprocess.run([exe, "--db", path, *command, "ada lovelace"], capture_output=True, text=True)
        assert proc.returncode == 0 and "1815" in proc.stdout, (command, proc.stderr)
    proc = subprocess.run([exe, "--db", path, "get", "ada lovelac"], capture_output=True, text=True)
    assert proc.returncode == 1 and "did you mean 'Ada Lovelace'?" in proc.stderr
    from fgraph.mcp.tools import Tools
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK, read_only=True) as handle:
        tools = Tools(handle)
        assert tools.about("ada lovelace")["data"] == {"person/born": 1815}
        assert tools.history("ADA LOVELACE")["data"]["items"][0]["v"] == 1815
