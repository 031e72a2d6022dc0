"""``fgraph mcp`` through the official SDK's stdio client (spec 10): discovery, the envelope,
bounds, errors, read-only for real, and the write tools with their idempotency and ``by``.
With FGRAPH_PEER set, the same calls on the published server give the same structured data."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import anyio
import pytest

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.mcp import OURS, call, server_env, session_run
from tests.support.paths import REPO
from tests.support.peerlib import peer_executable

# the published nine in their order, then ours: context (issue 14 item 5)
READ_TOOLS = ["recall", "about", "why", "history", "query", "datoms", "receipt", "schema", "explain", "context"]
NAMES = {"find": ["?n"], "where": [["?e", "person/name", "?n"]]}


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "m.db"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "ada", "person/name": "Ada Lovelace", "person/born": 1815}, by="me")
        db.transact({"id": "ada", "person/born": 1816, "person/knows": {"ref": "grace"}})
        db.transact({"id": "note", "memory/text": "Ada prefers vim"})
    return path


def test_read_only_server_lists_the_read_tools_and_names_itself(store):
    async def script(session):
        tools = (await session.list_tools()).tools
        return [t.name for t in tools], {t.name: t.annotations.read_only_hint for t in tools}
    names, read_only = session_run(OURS, store, script)
    assert names == READ_TOOLS and all(read_only.values())


def test_write_server_lists_the_write_tools_first(store):
    async def script(session):
        return [t.name for t in (await session.list_tools()).tools]
    assert session_run(OURS, store, script, "--write") == ["remember", "forget", "undo"] + READ_TOOLS


def test_about_returns_the_envelope_as_structured_content_and_text(store):
    is_error, structured, texts = session_run(OURS, store, call("about", entity="ada"))
    assert not is_error
    assert structured == {"ok": True, "basis_tx": 74,
                          "data": {"person/born": 1816, "person/knows": {"ref": "grace"}, "person/name": "Ada Lovelace"}}
    assert json.loads(texts[0]) == structured


def test_about_with_incoming_lists_what_refers_to_the_entity(store):
    """Ours (docs/mcp.md): the published about has no incoming; without it the data is unchanged."""
    async def script(session):
        schema = next(t for t in (await session.list_tools()).tools if t.name == "about").input_schema
        plain = await session.call_tool("about", {"entity": "ada", "incoming": False})
        wrapped = await session.call_tool("about", {"entity": "grace", "incoming": True})
        return schema["properties"]["incoming"], plain.structured_content, wrapped
    incoming, plain, wrapped = session_run(OURS, store, script)
    assert incoming["type"] == "boolean" and incoming["default"] is False
    assert plain["data"] == {"person/born": 1816, "person/knows": {"ref": "grace"}, "person/name": "Ada Lovelace"}
    assert not wrapped.is_error
    assert wrapped.structured_content == {"ok": True, "basis_tx": 74, "data": {
        "entity": {}, "incoming": [{"entity": "ada", "attribute": "person/knows", "name": "ada"}],
        "incoming_truncated": False}}
    assert json.loads(wrapped.content[0].text) == wrapped.structured_content


@pytest.mark.parametrize(("name", "arguments", "fragment"), [
    ("about", {"entity": "ada", "depth": 3}, "depth"),
    ("about", {"entity": "nobody"}, "not found"),
    ("about", {"entity": {"ref": "ada"}}, "entity reference"),
    ("history", {"entity": "ada", "limit": 0}, "limit"),
    ("why", {"entity": "ada", "attribute": "bad"}, "bad"),
    ("receipt", {"tx": "x"}, "validation error"),
    ("receipt", {"tx": 65}, "not found"),
    ("recall", {"query": "  "}, "blank"),
    ("recall", {"query": "vim", "k": 21}, "k"),
    ("query", {"q": dict(NAMES, limit=1001)}, "limit"),
    ("datoms", {"limit": 0}, "limit"),
    ("remember", {"text": "x", "operation_id": "o"}, "Unknown tool: remember"),
])
def test_bad_calls_are_tool_errors_that_say_what_to_fix(store, name, arguments, fragment):
    is_error, structured, texts = session_run(OURS, store, call(name, **arguments))
    assert is_error and structured is None
    assert fragment in texts[0]
    assert texts[0].startswith(f"Error executing tool {name}: ") or texts[0].startswith("Unknown tool")


def test_recall_finds_memories(store):
    is_error, structured, _ = session_run(OURS, store, call("recall", query="vim"))
    assert not is_error and [h["entity"] for h in structured["data"]["hits"]] == ["note"]


def test_a_missing_file_is_not_found_and_nothing_is_created(tmp_path):
    import subprocess
    path = tmp_path / "absent.db"
    proc = subprocess.run([OURS, "--db", str(path), "mcp"], input=b"", capture_output=True, env=server_env(),
                          timeout=60)
    assert proc.returncode == 1 and proc.stdout == b"" and proc.stderr.startswith(b"NotFound: ")
    assert not path.exists()


def test_the_read_only_connection_refuses_a_forced_write(store):
    """Annotations are advice; the connection is the guarantee: a handler that tried to write
    on the server's handle would be refused by SQLite itself."""
    from fgraph.mcp.tools import Tools
    with fgraph.connect(str(store), read_only=True) as db:
        tools = Tools(db)
        with pytest.raises(fgraph.FgraphError):
            tools.remember("mcp:forced", "op-forced", text="should not land")
        with pytest.raises(Exception) as caught:
            db.connection.execute("INSERT INTO fgraph_meta (key, value) VALUES ('x', 1)")
        assert "readonly" in str(caught.value).lower() or "read-only" in str(caught.value).lower()
    with fgraph.connect(str(store), read_only=True) as db:
        assert db.search(text="should").hits == []


def test_remember_is_idempotent_and_records_the_client(store):
    async def script(session):
        first = await session.call_tool("remember", {"text": "Ada prefers vim", "key": "note-1", "operation_id": "op-1",
                                                      "if_basis_tx": 74})
        again = await session.call_tool("remember", {"text": "Ada prefers vim", "key": "note-1", "operation_id": "op-1",
                                                      "if_basis_tx": 74})
        other = await session.call_tool("remember", {"text": "changed", "key": "note-1", "operation_id": "op-1"})
        return first.structured_content, again.structured_content, other.is_error
    first, again, conflict = session_run(OURS, store, script, "--write", client="Claude Code")
    assert first["data"]["status"] == "applied" and again["data"]["status"] == "already_applied"
    assert first["basis_tx"] == again["basis_tx"] == first["data"]["tx"]
    assert {"a": "fgraph/by", "v": "mcp:Claude Code"}.items() <= next(
        f for f in first["data"]["asserted"] if f["a"] == "fgraph/by").items()
    assert conflict


def test_forget_with_a_value_but_no_attribute_is_refused_before_writing(store):
    is_error, _, texts = session_run(OURS, store, call("forget", entity="ada", value=1816, operation_id="f-1",
                                                       if_basis_tx=74), "--write")
    assert is_error and "attribute" in texts[0]
    with fgraph.connect(str(store), read_only=True) as db:
        assert db.latest_tx() == 74 and db.entity("ada")["person/born"] == 1816


INTEROP = json.loads((REPO / "conformance" / "mcp" / "interop.json").read_text())


@pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set")
def test_the_published_server_gives_the_same_data(store, tmp_path):
    """Every call and read of conformance/mcp/interop.json in one session per runtime: the same
    error flag, structured data and text content per call, the same body or error code per read."""
    copy = tmp_path / "peer.db"
    shutil.copyfile(store, copy)

    async def script(session):
        out = []
        for name, arguments in INTEROP["calls"]:
            result = await session.call_tool(name, arguments)
            # an error's wording is each runtime's own (spec 10 §3.2); its prefix is the SDK's
            said = result.content[0].text.split(": ")[0] if result.is_error else None
            # the text content too, byte for byte: an agent reads it, keys in their order (issue 27)
            text = None if result.is_error else [c.text for c in result.content if getattr(c, "text", None)]
            out.append((name, arguments, result.is_error, result.structured_content, said, text))
        for uri in INTEROP["resources"]:
            try:
                page = json.loads((await session.read_resource(uri)).contents[0].text)
                out.append((uri, page.pop("next_uri", None) is not None, page))
            except Exception as exc:  # noqa: BLE001 - the JSON-RPC error code is the outcome
                out.append((uri, "error", getattr(getattr(exc, "error", None), "code", None)))
        return out
    ours, theirs = session_run(OURS, store, script), session_run(peer_executable(), copy, script)
    assert len(ours) == len(INTEROP["calls"]) + len(INTEROP["resources"]) == len(theirs)
    assert [o for o in ours if o[2] is False]
    for a, b in zip(ours, theirs):
        if a[0] == "recall" and a[2] is False and b[2] is False:
            a = _as_published_recall(a, b)
        assert a == b, a[:2]


def _as_published_recall(ours: tuple, theirs: tuple) -> tuple:
    """Our recall is the published one plus entity-level hits to fill k (decision S1): its hits
    start with the published hits, every extra one is marked, and it may have done more work.
    Without those, the structured data and the text bytes are the published server's."""
    name, arguments, is_error, data, said, text = ours
    hits, published = data["data"]["hits"], theirs[3]["data"]["hits"]
    assert hits[:len(published)] == published, arguments
    assert all(hit["how"] == "entity" for hit in hits[len(published):]), arguments
    assert data["data"]["work_used"] >= theirs[3]["data"]["work_used"], arguments
    if len(hits) > len(published):
        return theirs  # the extra hits change the text; the structured checks above are the claim
    work = str(theirs[3]["data"]["work_used"])
    text = [re.sub(r'("work_used":\s*)\d+', lambda m: m.group(1) + work, t) for t in text]
    data = {**data, "data": {**data["data"], "work_used": theirs[3]["data"]["work_used"]}}
    return (name, arguments, is_error, data, said, text)


def test_schema_pages_follow_their_cursor_at_its_basis(store):
    async def script(session):
        pages, arguments = [], {"limit": 2, "include_system": True}
        while True:
            result = (await session.call_tool("schema", arguments)).structured_content
            pages.append(result["data"])
            if result["data"]["next_cursor"] is None:
                return pages
            arguments = dict(arguments, cursor=result["data"]["next_cursor"])
            if len(pages) == 2:
                other = await session.call_tool("schema", {"limit": 3, "cursor": arguments["cursor"]})
                assert other.is_error and "does not match" in other.content[0].text
    pages = session_run(OURS, store, script)
    with fgraph.connect(str(store), read_only=True) as db:
        whole = db.schema(include_system=True)
    assert [a for p in pages for a in p["attributes"]] == whole["attributes"]
    assert len(pages) == (len(whole["attributes"]) + len(whole["shapes"]) + 1) // 2
    assert {p["digest"] for p in pages} == {whole["digest"]} and pages[-1]["truncated"] is False


def test_every_tool_is_documented():
    """docs/mcp.md names every tool the server can list (read-only and with --write) and every resource template."""
    from fgraph.mcp.server import build
    text = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")

    async def names():
        with fgraph.connect(":memory:") as db:
            return [t.name for t in await build(db, write=True).list_tools()]
    async def templates():
        with fgraph.connect(":memory:") as db:
            return [t.uri_template for t in await build(db, write=False).list_resource_templates()]
    listed = anyio.run(names)
    assert listed and all(f"| `{name}`" in text for name in listed), listed
    uris = anyio.run(templates)
    assert len(uris) == 6 and all(f"| `{uri}`" in text for uri in uris), uris


def read(*uris: str, follow: bool = False):
    """Read each URI (following next_uri when ``follow``); bodies as JSON, failures as (code, message)."""
    async def script(session):
        out = []
        for uri in uris:
            while uri:
                try:
                    result = await session.read_resource(uri)
                except Exception as exc:  # noqa: BLE001 - the JSON-RPC error is the outcome
                    error = getattr(exc, "error", None)
                    out.append(("error", getattr(error, "code", None), getattr(error, "message", str(exc))))
                    break
                (content,) = result.contents
                page = json.loads(content.text)
                out.append(page)
                uri = page.get("next_uri") if follow else None
        return out
    return script


@pytest.fixture
def busy_store(tmp_path):
    """Many events, one entity with 150 values, and one event too large to share a page."""
    path = tmp_path / "busy.db"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        db.declare("bag/items", many=True)
        db.transact({"id": "bag", "bag/items": list(range(150))})
        for i in range(120):
            db.transact({"id": f"e{i}", "e/n": i})
        db.transact({"id": "big", "big/text": "x" * 200_000})
        db.transact({"id": "after", "e/n": -1}, tx={"tx/note": "custom"})
    return path


def test_resources_page_and_chunk(busy_store):
    pages = session_run(OURS, busy_store, read("fgraph://entity/bag", "fgraph://changes", follow=True))
    bag = [p for p in pages if "items" in p]
    assert [len(p["items"]) for p in bag] == [100, 50] and "at=" not in bag[0]["next_uri"]
    changes = [p for p in pages if "events" in p]
    assert sum(len(p["events"]) for p in changes) == 124 - 1  # every event but the oversized one
    oversized = [p["oversized_event"] for p in changes if "oversized_event" in p]
    assert len(oversized) == 1 and oversized[0]["bytes"] > 196_608
    assert {p["basis_tx"] for p in changes} == {changes[0]["basis_tx"]}
    chunks = session_run(OURS, busy_store, read(oversized[0]["uri"], follow=True))
    payload = b"".join(base64.b64decode(c["data"]) for c in chunks)
    assert [len(base64.b64decode(c["data"])) for c in chunks][:1] == [131_072]
    assert hashlib.sha256(payload).hexdigest() == oversized[0]["event_hash"] and len(payload) == oversized[0]["bytes"]


@pytest.mark.parametrize("uri", [
    "fgraph://entity/bag?at=abc", "fgraph://tx/ada", "fgraph://tx/99999", "fgraph://changes?since=63",
    "fgraph://changes?cursor=garbage", "fgraph://event/not-a-uuid?basis=66&digest=" + "0" * 64, "fgraph://nothing",
])
def test_resource_errors_are_json_rpc_errors(busy_store, uri):
    (outcome,) = session_run(OURS, busy_store, read(uri))
    assert outcome[0] == "error" and outcome[1] in (-32602, -32603) and outcome[2]


@pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set")
def test_the_published_server_serves_the_same_resources(busy_store, tmp_path):
    uris = ["fgraph://entity/bag", "fgraph://entity/e3?at=70", "fgraph://entity/nobody", "fgraph://tx/66",
            "fgraph://tx/" + "0" * 8 + "-0000-4000-8000-" + "0" * 12, "fgraph://schema", "fgraph://schema?prefix=e%2F",
            "fgraph://changes?since=300", "fgraph://tx/ada", "fgraph://changes?since=abc", "fgraph://entity/bag?at=65"]
    copy = tmp_path / "peer.db"
    shutil.copyfile(busy_store, copy)
    ours = session_run(OURS, busy_store, read(*uris))
    theirs = session_run(peer_executable(), copy, read(*uris))
    for uri, a, b in zip(uris, ours, theirs):
        if isinstance(a, tuple) or isinstance(b, tuple):
            assert isinstance(a, tuple) and isinstance(b, tuple) and a[1] == b[1], uri
        else:
            assert {k: v for k, v in a.items() if k != "next_uri"} == {k: v for k, v in b.items() if k != "next_uri"}, uri
    changes_ours = session_run(OURS, busy_store, read("fgraph://changes", follow=True))
    changes_theirs = session_run(peer_executable(), copy, read("fgraph://changes", follow=True))
    assert [len(p["events"]) for p in changes_ours] == [len(p["events"]) for p in changes_theirs]
    assert [p["events"] for p in changes_ours] == [p["events"] for p in changes_theirs]


PROTOCOL_LINES = [
    '{"jsonrpc":"2.0","id":0,"method":"tools/list"}', 'garbage {', '[{"jsonrpc":"2.0","id":9,"method":"ping"}]',
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},'
    '"clientInfo":{"name":"probe","version":"1"}}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}', '{"jsonrpc":"2.0","id":2,"method":"ping"}',
    '{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"x"}}',
    '{"jsonrpc":"2.0","id":4,"method":"resources/list"}',
    '{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{}}',
    '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"about","arguments":[1]}}',
    '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"about","arguments":{"entity":"ada","depth":"x"}}}',
    '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"about","arguments":{"entity":"ada"}}}',
]


def _protocol_outcomes(executable: str, path, replies_expected: int) -> list:
    """Raw JSON-RPC lines in, every stdout line must be JSON-RPC; (id, error code or result kind) out,
    the answers to lines without a readable id (id null) first."""
    import subprocess
    import time
    proc = subprocess.Popen([executable, "--db", str(path), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=server_env())
    proc.stdin.write(("\n".join(PROTOCOL_LINES) + "\n").encode())
    proc.stdin.flush()
    replies, deadline = [], time.monotonic() + 60
    while len(replies) < replies_expected and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        replies.append(json.loads(line))  # anything but JSON-RPC on stdout fails here
    proc.stdin.close()
    replies += [json.loads(line) for line in proc.stdout]  # whatever else it answers before it ends
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0  # end of stdin ends the server cleanly
    outcomes = [(r["id"], r["error"]["code"] if "error" in r else
                 ("tool error" if r["result"].get("isError") else "ok")) for r in replies]
    return sorted(outcomes, key=lambda outcome: (outcome[0] is not None, outcome[0] or 0, str(outcome[1])))


def test_protocol_edges_keep_the_server_serving(store):
    outcomes = _protocol_outcomes(OURS, store, 11)
    answered = [(0, -32602), (1, "ok"), (2, "ok"), (3, 0), (4, "ok"), (5, -32602), (6, -32602),
                (7, "tool error"), (8, "ok")]
    # the garbage line and the batch are answered too (docs/mcp.md M7), with id null as JSON-RPC asks
    assert outcomes == [(None, -32600), (None, -32700)] + answered
    if peer_executable():
        copy = store.parent / "peer-protocol.db"
        shutil.copyfile(store, copy)
        # the published server (as the SDK's transport) answers neither: the same nine, and nothing more
        assert _protocol_outcomes(peer_executable(), copy, 9) == answered


EMBEDDER = """import json, sys
counts = [0, 0, 0, 0]
for ch in sys.stdin.read():
    counts[ord(ch) % 4] += 1
print(json.dumps(counts))
"""


def _embed_session(executable: str, path, embedder: str):
    async def script(session):
        before = await session.call_tool("recall", {"query": "vim"})
        stored = await session.call_tool("remember", {"text": "Grace prefers emacs", "key": "note-2",
                                                      "operation_id": "e-1"})
        after = await session.call_tool("recall", {"query": "prefers", "k": 2})
        facts_only = await session.call_tool("remember", {"facts": {"id": "x", "x/n": 1}, "operation_id": "e-2"})
        return [(r.is_error, r.structured_content if not r.is_error else r.content[0].text.split(":")[0])
                for r in (before, stored, after, facts_only)]
    return session_run(executable, path, script, "--write", "--embed-cmd", json.dumps([sys.executable, embedder]))


def test_embed_cmd_feeds_remember_and_recall(store, tmp_path):
    embedder = tmp_path / "embed.py"
    embedder.write_text(EMBEDDER)
    copy = tmp_path / "peer-embed.db"
    shutil.copyfile(store, copy)
    ours = _embed_session(OURS, store, str(embedder))
    stored = ours[1][1]["data"]
    counts = [0, 0, 0, 0]
    for ch in "Grace prefers emacs":
        counts[ord(ch) % 4] += 1
    assert any(f["a"] == "memory/embedding" and f["v"] == {"vector": counts} for f in stored["asserted"])
    assert ours[0][0] is True  # recall before any embedding exists: the vector attribute is not there yet
    hits = ours[2][1]["data"]["hits"]
    assert hits[0]["entity"] == "note-2" and [m["a"] for m in hits[0]["matched"]] == ["memory/text", "memory/embedding"]
    assert not any(f["a"] == "memory/embedding" for f in ours[3][1]["data"]["asserted"])
    if peer_executable():
        assert _embed_session(peer_executable(), copy, str(embedder)) == ours


def _server_rss_kib() -> int:
    """VmRSS of the ``fgraph ... mcp`` child of this test process (Linux /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        if ppid == os.getpid() and b"mcp" in cmdline:
            return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    raise AssertionError("the mcp server process was not found")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to read the server's RSS")
def test_a_thousand_mixed_calls_beside_a_writer_hold_flat_memory(store):
    import subprocess
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, fgraph\n"
        "db = fgraph.connect(sys.argv[1])\n"
        "for i in range(300):\n"
        "    db.transact({'id': f'w{i % 20}', 'w/n': i, 'w/text': f'written note {i}'})\n"
        "    time.sleep(0.01)\n"), str(store)])
    calls = [("about", {"entity": "ada"}), ("why", {"entity": "ada"}), ("history", {"entity": "ada", "limit": 5}),
             ("recall", {"query": "note"}), ("query", {"q": NAMES}), ("datoms", {"limit": 20}),
             ("schema", {"limit": 10}), ("receipt", {"tx": 64}), ("about", {"entity": "nobody"}),
             ("explain", {"q": NAMES})]

    async def script(session):
        errors, sizes = 0, []
        for round_ in range(100):
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                errors += result.is_error and name != "about"
            if round_ in (10, 99):
                sizes.append(_server_rss_kib())
        page = await session.read_resource("fgraph://changes")
        return errors, sizes, json.loads(page.contents[0].text)["basis_tx"]
    try:
        errors, (early, late), _ = session_run(OURS, store, script)
    finally:
        writer.wait(timeout=120)
    assert errors == 0
    assert late - early < 16 * 1024, f"server RSS grew from {early} KiB to {late} KiB over 900 calls"


def test_later_pages_keep_the_first_pages_basis_while_another_process_writes(tmp_path):
    path = tmp_path / "pages.db"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        for i in range(150):
            db.transact({"id": f"p{i}", "p/n": i})

    async def script(session):
        first = json.loads((await session.read_resource("fgraph://changes")).contents[0].text)
        with fgraph.connect(str(path)) as other:
            other.transact({"id": "late", "p/n": -1})
        second = json.loads((await session.read_resource(first["next_uri"])).contents[0].text)
        fresh = json.loads((await session.read_resource("fgraph://changes?since=64")).contents[0].text)
        return first, second, fresh
    first, second, fresh = session_run(OURS, path, script)
    assert second["basis_tx"] == first["basis_tx"] < fresh["basis_tx"]
    assert len(first["events"]) + len(second["events"]) == 150 and "next_uri" not in second


def test_undo_and_forget_through_the_client(store):
    async def script(session):
        forgot = await session.call_tool("forget", {"entity": "ada", "attribute": "person/born", "value": 1816,
                                                    "operation_id": "f-1", "if_basis_tx": 74})
        tx = forgot.structured_content["data"]["tx"]
        stale = await session.call_tool("undo", {"tx": tx, "operation_id": "u-1", "if_basis_tx": 74})
        undone = await session.call_tool("undo", {"tx": tx, "operation_id": "u-1", "if_basis_tx": tx})
        retried = await session.call_tool("undo", {"tx": tx, "operation_id": "u-1", "if_basis_tx": tx})
        genesis = await session.call_tool("undo", {"tx": 64, "operation_id": "u-2", "if_basis_tx": tx})
        about = await session.call_tool("about", {"entity": "ada"})
        return forgot, stale, undone, retried, genesis, about
    forgot, stale, undone, retried, genesis, about = session_run(OURS, store, script, "--write")
    assert [f["v"] for f in forgot.structured_content["data"]["retracted"]] == [1816]
    assert stale.is_error and "stale" in stale.content[0].text
    assert undone.structured_content["data"]["status"] == "applied"
    assert retried.structured_content["data"]["status"] == "already_applied"
    assert genesis.is_error
    assert about.structured_content["data"]["person/born"] == 1816


def test_a_client_that_disconnects_mid_call_ends_the_server_cleanly(store):
    import subprocess
    proc = subprocess.Popen([OURS, "--db", str(store), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=server_env())
    lines = [PROTOCOL_LINES[3], PROTOCOL_LINES[4],
             '{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"history","arguments":{"entity":"ada"}}}']
    out, err = proc.communicate(("\n".join(lines) + "\n").encode(), timeout=60)  # stdin closes at once
    assert proc.returncode == 0
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in out.splitlines())
    assert b"Traceback" not in err


def test_oversized_arguments_are_errors_and_the_server_keeps_serving(store):
    async def script(session):
        huge = await session.call_tool("about", {"entity": "x" * 2_000_000})
        deep = await session.call_tool("query", {"q": {"find": ["?e"], "where": [["?e", "a/b", {"json": [[[[[[]]]]]]}]]}})
        long_text = await session.call_tool("remember", {"text": "y" * 2_000_000, "operation_id": "big"})
        after = await session.call_tool("about", {"entity": "ada"})
        return huge.is_error, deep.is_error, long_text.is_error, after.is_error
    assert session_run(OURS, store, script, "--write") == (True, False, True, False)


def test_the_schema_resource_pages_at_one_basis(tmp_path):
    path = tmp_path / "wide.db"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        db.transact([{"id": f"a/{i:03d}", "fgraph/type": "int"} for i in range(130)])
        db.declare_shape("shape/wide", required=["a/000"])
    pages = session_run(OURS, path, read("fgraph://schema?prefix=a%2F", "fgraph://schema", follow=True))
    # shapes are listed whatever the prefix, as the published runtime does
    assert [len(p["attributes"]) + len(p["shapes"]) for p in pages] == [100, 31, 100, 32]
    assert "prefix=a%2F" in pages[0]["next_uri"] and {p["basis_tx"] for p in pages} == {pages[0]["basis_tx"]}
    assert pages[-1]["shapes"][0]["name"] == "shape/wide" and pages[0]["digest"] == pages[1]["digest"]


REQUIRED = {"recall": {"query": "vim"}, "about": {"entity": "ada"}, "why": {"entity": "ada"},
            "history": {"entity": "ada"}, "datoms": {"components": ["ada"]}}


def _bound_calls(tools) -> list:
    """(tool, arguments, accepted?) for every bound a tool's input schema states: each edge and
    each enum choice accepted, one step beyond each edge and an unknown choice refused."""
    calls = []
    for tool in tools:
        for name, spec in tool.input_schema.get("properties", {}).items():
            base = dict(REQUIRED.get(tool.name, {}))
            for choice in spec.get("enum", []):
                calls.append((tool.name, dict(base, **{name: choice}), True))
            if "enum" in spec:
                calls.append((tool.name, dict(base, **{name: "bogus"}), False))
            if "minimum" in spec:
                calls += [(tool.name, dict(base, **{name: spec["minimum"]}), True),
                          (tool.name, dict(base, **{name: spec["minimum"] - 1}), False)]
            if "maximum" in spec:
                calls += [(tool.name, dict(base, **{name: spec["maximum"]}), True),
                          (tool.name, dict(base, **{name: spec["maximum"] + 1}), False)]
    return calls


def test_input_schemas_state_the_bounds_the_tools_enforce(store, tmp_path):
    """Issue 30 item 6: minimum/maximum/enum in the input schemas are exactly what the tools
    accept: each edge answers, one beyond is refused with the tool's own words naming the
    argument. With FGRAPH_PEER set, the published server accepts and refuses the same calls."""
    async def stated(session):
        return _bound_calls((await session.list_tools()).tools)

    calls = session_run(OURS, store, stated)
    bounded = {(tool, name) for tool, arguments, _ in calls for name in arguments if name not in REQUIRED.get(tool, {})}
    assert {("recall", "k"), ("recall", "expand"), ("about", "depth"), ("why", "limit"), ("history", "limit"),
            ("datoms", "index"), ("datoms", "source"), ("datoms", "limit"), ("schema", "limit"),
            ("context", "budget"), ("context", "limit")} <= bounded

    async def outcomes(session):
        out = []
        for tool, arguments, _ in calls:
            result = await session.call_tool(tool, arguments)
            out.append((result.is_error, result.content[0].text if result.is_error else ""))
        return out

    ours = session_run(OURS, store, outcomes)
    for (tool, arguments, accepted), (is_error, text) in zip(calls, ours, strict=True):
        assert is_error is not accepted, (tool, arguments, text)
        if not accepted:
            argument = next(n for n in arguments if n not in REQUIRED.get(tool, {}))
            assert text.startswith(f"Error executing tool {tool}: ") and argument in text, (tool, arguments, text)
    peer = peer_executable()
    if peer is not None:
        copy = tmp_path / "peer.db"
        shutil.copyfile(store, copy)
        theirs = session_run(peer, copy, outcomes)
        # context is ours only: the published server has no such tool
        published = [(c, o[0]) for c, o in zip(calls, theirs) if c[0] != "context"]
        assert published and all(is_error is not c[2] for c, is_error in published), published
