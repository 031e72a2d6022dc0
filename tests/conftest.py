"""Fixtures every test gets or asks for by name: no ambient FGRAPH_* settings, no connection left open,
the deterministic clock and seed. Helpers tests import live in tests/support (tests/test_house_rules.py)."""

from __future__ import annotations

import gc
import os
import sys
import threading
import weakref

import apsw
import pytest

from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED


# Variables that configure the test run itself; every other FGRAPH_* variable is cleared
# around each test, so a test opts in to a fixed clock or seed instead of inheriting one.
TEST_SETTINGS = frozenset({"FGRAPH_PEER", "FGRAPH_EXAMPLES", "FGRAPH_HISTORIES", "FGRAPH_HISTORY_SEED",
                           "FGRAPH_HISTORY_SHRINK", "FGRAPH_TORTURE", "FGRAPH_NO_FORK_SERVER", "FGRAPH_QUERIES", "FGRAPH_QUERY_SEED",
                           "FGRAPH_LARGE_QUERIES", "FGRAPH_LARGE_TRANSACTIONS"})


@pytest.fixture(autouse=True)
def no_ambient_fgraph_settings(monkeypatch):
    for name in list(os.environ):
        if name.startswith("FGRAPH_") and name not in TEST_SETTINGS:
            monkeypatch.delenv(name)


# Which thread opened each connection: the CLI conformance cases run in prefetch threads beside
# the tests (their `facts` step opens a read-only handle), and those handles are not the leak
# check's business -- nor may it close them under the thread using them.
_OPENED_BY: "weakref.WeakKeyDictionary[apsw.Connection, int]" = weakref.WeakKeyDictionary()
apsw.connection_hooks.append(lambda connection: _OPENED_BY.__setitem__(connection, threading.get_ident()))


def _connections_of_this_thread() -> list:
    me = threading.get_ident()
    return [c for c in apsw.connections() if _OPENED_BY.get(c) == me]


@pytest.fixture(autouse=True)
def no_connection_left_open():
    """Fails a test that leaves an SQLite connection open (one it still references after it ends)."""
    before = {id(c) for c in _connections_of_this_thread()}
    yield
    gc.collect()
    leaked = [c for c in _connections_of_this_thread() if id(c) not in before]
    names = [c.filename for c in leaked]
    for connection in leaked:
        connection.close()
    assert not leaked, f"the test left {len(leaked)} connection(s) open: {names}"


@pytest.fixture
def deterministic(monkeypatch):
    """The conformance environment of spec 11 §2.3 for library and subprocess calls."""
    monkeypatch.setenv("FGRAPH_CLOCK", str(CONFORMANCE_CLOCK))
    monkeypatch.setenv("FGRAPH_EVENT_SEED", CONFORMANCE_SEED)


def pytest_terminal_summary(terminalreporter):
    """How many conformance steps each adapter actually checked (a skipped step checks nothing)."""
    module = sys.modules.get("tests.interop.test_conformance")
    counts = getattr(module, "CHECKED_STEPS", None)
    totals = getattr(module, "TOTAL_STEPS", {})
    if totals:
        listed = ", ".join(f"{label} {counts[label]}/{n}" for label, n in sorted(totals.items()))
        terminalreporter.write_line(f"conformance steps checked/total per adapter: {listed}")
    torture = sys.modules.get("tests.support.torture")
    for line in getattr(torture, "SUMMARY", {}).values():
        terminalreporter.write_line(line)
