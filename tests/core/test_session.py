"""Proves the write session (fgraph/core/session.py): one object carries the connection, the
injected clock and event UUIDs and the caches, every write path takes it, and no function
below the façade takes the clock and event factory as loose parameters again."""

from __future__ import annotations

import ast
import io
import pathlib

import fgraph
from fgraph.core import connection
from fgraph.core.identity import seeded_event_uuid
from fgraph.core.session import WriteSession
from fgraph.core.transact import Request, transact
from fgraph.ops.excise import excise
from fgraph.streams.apply import apply_stream

PACKAGE = pathlib.Path(fgraph.__file__).parent
START = 1_800_000_000_000_000


def session_on(path: str, start: int = START) -> WriteSession:
    ticks = iter(range(start, start + 10**9, 1_000_000))
    conn = connection.open_connection(path, False, genesis_clock=lambda: start - 1)
    return WriteSession(conn, lambda: next(ticks), lambda tx: seeded_event_uuid("session", tx))


def test_transact_uses_the_session_clock_events_and_caches(tmp_path):
    session = session_on(str(tmp_path / "s.db"))
    try:
        first = transact(session, Request({"id": "ada", "person/name": "Ada"}))
        second = transact(session, Request({"id": "ada", "person/name": "Ada L."}))
        assert (first["at"], second["at"]) == (START, START + 1_000_000)
        assert first["event"] == seeded_event_uuid("session", first["tx"])
        assert session.schema_cache.head.latest == second["tx"]  # the next write reads no head back
        assert session.identity_cache.by_name  # names learned by the first write serve the second
        session.forget_cached_state()
        assert session.schema_cache.head is None and not session.identity_cache.by_name
    finally:
        connection.close_connection(session.conn)


def test_apply_and_excise_take_the_same_session(tmp_path):
    source = fgraph.connect(str(tmp_path / "a.db"))
    source.transact({"id": "ada", "person/name": "Ada"})
    stream = "".join(line + "\n" for line in source.iter_events())
    source.close()
    session = session_on(str(tmp_path / "b.db"), START + 10**9)
    try:
        assert apply_stream(session, io.StringIO(stream))["applied"] == 1
        report = excise(session, str(tmp_path / "b.db"), "ada")
        assert report["at"] % 1_000_000 == 0 and report["at"] > START + 10**9 and report["event"] == seeded_event_uuid("session", report["tx"])
    finally:
        connection.close_connection(session.conn)


def test_no_function_below_the_facade_takes_clock_and_event_factory_loose():
    loose = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "db.py" and path.parent == PACKAGE:
            continue  # connect() and Db() are where callers inject them
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                names = {a.arg for a in node.args.args + node.args.kwonlyargs}
                if {"clock", "event_factory"} <= names:
                    loose.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert loose == []
