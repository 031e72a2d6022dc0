"""One grammar for every ``since`` and ``at`` (issue 49 item 2, decision T2 in docs/query.md): a
transaction id, an event UUID, an RFC 3339 instant or a duration name the same transaction on every
command, library call and MCP tool and resource. The commands and MCP surfaces are found from the CLI's
click tree, the MCP tool table and the server's resource templates, so a new one that takes a time
fails ``test_every_time_option_is_in_the_table`` until it is driven here."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.parse

import anyio
import click
import pytest

import fgraph
from fgraph.cli.base import TimeParam
from fgraph.cli.main import cli
from fgraph.mcp import server as mcp_server
from fgraph.mcp.specs import TOOLS
from tests.support.cli import FGRAPH, clean_env, invoke_cli
from tests.support.constants import CONFORMANCE_CLOCK as START
from tests.support.stores import seeded_db

NOW = START + 10_000_000            # the clock of every call: 10 s after genesis
POINT = 69                          # the transaction every form below names (bob's, at START + 2 s)
QUERY = '{"find":["?n"],"where":[["?e","p/name","?n"]]}'
HOLDS = "this store holds 5 transactions, from 64 at 2026-01-01T00:00:00.000000Z to 73 at"

#: how each (command, parameter) that takes a time is run, ``T`` standing for the time
CLI = {
    ("get", "at"): ["get", "ada", "--at", "T"],
    ("history", "at"): ["history", "ada", "--at", "T"],
    ("diff", "t1"): ["diff", "T", "73"],
    ("diff", "t2"): ["diff", "64", "T"],
    ("tail", "since"): ["tail", "--since", "T"],
    ("q", "at"): ["q", QUERY, "--at", "T"],
    ("explain", "at"): ["explain", QUERY, "--at", "T"],
    ("datoms", "at"): ["datoms", "--at", "T"],
    ("context", "since"): ["context", "--by", "change", "--since", "T"],   # the entity view windows record times
}
#: the lower bounds (an integer that is no transaction is a position there); the rest are views
SINCE = {("tail", "since"), ("context", "since"), ("tool", "context", "since"),
         ("resource", "changes", "since"), ("resource", "context", "since")}
MCP = {
    ("tool", "context", "since"): lambda t: ("tool", "context", {"since": t, "by": "change"}),
    ("resource", "entity", "at"): lambda t: ("resource", f"fgraph://entity/ada?at={urllib.parse.quote(str(t), safe='')}"),
    ("resource", "changes", "since"): lambda t: ("resource", f"fgraph://changes?since={urllib.parse.quote(str(t), safe='')}"),
    ("resource", "context", "since"): lambda t: ("resource", f"fgraph://context?by=change&since={urllib.parse.quote(str(t), safe='')}"),
}


def _cli_time_params():
    def walk(cmd, path=()):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                yield from walk(sub, (*path, name))
        else:
            yield " ".join(path), cmd
    for name, cmd in walk(cli):
        for param in cmd.params:
            if isinstance(param.type, TimeParam) or param.name in ("since", "at", "until"):
                yield name, param.name


async def _mcp_time_params(db):
    server = mcp_server.build(db, write=True, allow_excise=True)
    found = {("tool", spec.name, p.name) for spec in TOOLS for p in spec.params if p.name in ("since", "at", "until")}
    for template in await server.list_resource_templates():
        name = re.match(r"fgraph://(\w+)", template.uri_template).group(1)
        query = re.search(r"\{\?([^}]*)\}", template.uri_template)
        found |= {("resource", name, p) for p in (query.group(1).split(",") if query else ()) if p in ("since", "at", "until")}
    return found


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("grammar") / "g.db"
    with seeded_db(str(path)) as db:
        for name in ("ada", "bob", "cy"):                   # tx 67, 69, 71 (entities 65, 68, 70)
            db.transact({"id": name, "p/name": name.title()})
        with fgraph.connect(":memory:", clock=START - 86_400_000_000) as other:   # an event stamped a day before this store
            other.transact({"id": "dan", "p/name": "Dan"})
            db.apply_summary(list(other.iter_events()))          # applied here as tx 73
    with fgraph.connect(str(path), read_only=True) as db:
        events = [json.loads(line) for line in db.iter_events()]
    return path, {"uuid": events[1]["event"], "applied": events[3]["event"]}


def _forms(store, key):
    """Every way of naming transaction 69, and what names the beginning."""
    _, ids = store
    same = ["69", ids["uuid"], ids["uuid"].upper(), "2026-01-01T00:00:02Z", "2026-01-01T00:00:02.5Z",
            "2026-01-01T01:00:02+01:00", "8s", "0h0m8s"]
    if key in SINCE:
        same.append("70")                   # bob's entity id: after the last transaction at or below it
    beginning = ["2025-12-06T00:00:00Z", "0001-01-01T00:00:00Z", "999w"]
    return same, beginning


def _cli(store, args, t):
    path, _ = store
    return invoke_cli(["--db", path, *[str(t) if a == "T" else a for a in args]], FGRAPH_CLOCK=str(NOW))


def test_every_time_option_is_in_the_table(store):
    assert set(_cli_time_params()) == set(CLI), "drive the new time option in CLI (and SINCE if it is a lower bound)"
    with fgraph.connect(str(store[0]), read_only=True) as db:
        assert anyio.run(_mcp_time_params, db) == set(MCP)


@pytest.mark.parametrize("key", sorted(CLI))
def test_every_cli_form_names_the_same_transaction(store, key):
    same, beginning = _forms(store, key)
    want = _cli(store, CLI[key], POINT)
    assert want[0] == 0, want
    for form in same:
        assert _cli(store, CLI[key], form) == want, form
    genesis = _cli(store, CLI[key], 64)
    for form in beginning:
        assert _cli(store, CLI[key], form) == genesis, form


@pytest.mark.parametrize("key", sorted(CLI))
def test_every_cli_refusal_says_what_the_store_holds(store, key):
    code, out, err = _cli(store, CLI[key], "00000000-0000-4000-8000-000000000099")
    assert (code, out) == (1, "") and err.startswith("NotFound: 00000000-0000-4000-8000-000000000099 is no event")
    assert HOLDS in err


def test_an_applied_event_uuid_is_its_local_transaction(store):
    _, ids = store
    assert _cli(store, CLI[("tail", "since")], ids["applied"]) == (0, "", "")
    assert _cli(store, CLI[("get", "at")], ids["applied"]) == _cli(store, CLI[("get", "at")], 73)


def _mcp(db, call):
    async def run():
        server = mcp_server.build(db, write=False)
        try:
            if call[0] == "tool":
                result = await server.call_tool(call[1], call[2])
                return result.structured_content
            return [c.content for c in await server.read_resource(call[1])]
        except Exception as exc:  # noqa: BLE001 - the error's text is what a client sees
            return f"{type(exc).__name__}: {exc}"
    return anyio.run(run)


@pytest.mark.parametrize("key", sorted(MCP))
def test_every_mcp_form_names_the_same_transaction(store, key):
    same, beginning = _forms(store, key)
    with fgraph.connect(str(store[0]), read_only=True, clock=NOW) as db:
        want = _mcp(db, MCP[key](POINT))
        assert not isinstance(want, str), want
        for form in same:
            assert _mcp(db, MCP[key](form)) == want, form
        genesis = _mcp(db, MCP[key](64))
        for form in beginning:
            assert _mcp(db, MCP[key](form)) == genesis, form
        refused = _mcp(db, MCP[key]("00000000-0000-4000-8000-000000000099"))
        assert "is no event of this store" in refused and HOLDS in refused


@pytest.mark.parametrize("method", ["at", "follow_lines", "context", "changes", "resolve_time"])
def test_every_library_call_reads_the_same_grammar(store, method):
    same, beginning = _forms(store, ("tail", "since") if method in ("follow_lines", "context", "changes") else ("get", "at"))

    def call(db, t):
        if method == "follow_lines":
            stop = iter([False, True])
            return list(db.follow_lines(t, stop=lambda: next(stop)))
        if method == "at":
            return db.at(t).latest_tx()
        if method == "context":
            return db.context(t)
        if method == "changes":
            return db.changes(t)
        return db.resolve_time(t)
    with fgraph.connect(str(store[0]), read_only=True, clock=NOW) as db:
        want = call(db, POINT)
        for form in same:
            assert call(db, form) == want, form
        for form in beginning:
            assert call(db, form) == call(db, 64), form
        with pytest.raises(fgraph.NotFound, match=HOLDS):
            call(db, "00000000-0000-4000-8000-000000000099")


def test_an_integer_below_genesis_keeps_the_published_error_names(store):
    """tail --since 63 is TypeError (spec 04 §4), with --follow NotFound (the published runtime reads
    it as an instant there); context --since 63 is NotFound, like follow."""
    assert _cli(store, ["tail", "--since", "63"], "")[2].startswith("TypeError: ")
    code, _, err = _cli(store, ["context", "--since", "63"], "")
    assert code == 1 and err.startswith("NotFound: 63 is before the first transaction") and HOLDS in err
    with fgraph.connect(str(store[0]), read_only=True) as db, pytest.raises(fgraph.NotFound, match=HOLDS):
        next(db.follow_lines(63))


@pytest.mark.parametrize("since", ["65", "68", "2025-12-06T00:00:00Z"])
def test_tail_follow_since_an_integer_or_an_early_time_streams(store, since):
    """The issue's ``tail --since 65 --follow`` (the old code: NotFound, 65 µs before the first transaction)."""
    path, _ = store
    expected = _cli(store, ["tail", "--since", since], "")[1].splitlines()
    proc = subprocess.Popen([FGRAPH, "--db", str(path), "tail", "--since", since, "--follow"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env(), text=True, start_new_session=True)
    try:
        got = [proc.stdout.readline().rstrip("\n") for _ in expected]   # each readline waits for its line
        assert got == expected and len(got) >= 3
        assert proc.poll() is None   # still following
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert err == ""
