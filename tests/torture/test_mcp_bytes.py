"""Hostile bytes in every string argument of every MCP tool (issue 29 items 2 and 14, docs/mcp.md M7).

A real `fgraph mcp` (read-only, and `--write`) is driven over raw pipes. For each tool its `tools/list`
schema offers, every argument that accepts a string (and a string inside each object or array argument
the tool reads: a query's value, a query argument, a fact, a datoms component) gets a value with a
hostile payload at its start, middle or end: invalid UTF-8 bytes, overlong forms, UTF-8-encoded
surrogates, truncated sequences, and lone surrogate escapes; the other arguments hold sensible valid
values. Each such call is answered, within a bound, by exactly one JSON-RPC -32700 carrying its id, and
nothing is done: a write server's (latest tx, logical digest) is the same after them. The same values
sent as real UTF-8 or as a surrogate-pair escape are served (a tool result, at worst a tool error that
says what to fix, never a protocol error or a crash), and what a `remember` stores is the text sent,
exactly. Every stdout line is JSON-RPC, the server answers a final ping, ends with 0 at the end of its
input and logs no traceback."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections import Counter

import orjson
import pytest

import fgraph
from tests.support.torture import FGRAPH, FULL, report, rng, state

PARSE_ERROR = -32700
REPLY_BOUND = 15.0      # seconds for one reply on a busy 2-core machine; the usual reply takes milliseconds
EXIT_BOUND = 30.0
MARK = "@@SLOT@@"       # where the payload goes in a value; ASCII, so JSON encoding leaves it alone

# The bytes as they appear on the wire, inside a JSON string literal.
HOSTILE = {
    "invalid-ff": b"\xff",
    "latin-1": b"caf\xe9",
    "overlong-2": b"\xc0\xaf",
    "overlong-3": b"\xe0\x80\xaf",
    "utf8-surrogate": b"\xed\xa0\x80",
    "truncated": b"\xe2\x82",
    "lone-high-escape": b"\\ud800",
    "lone-low-escape": b"\\udfff",
    "high-then-char-escape": b"\\ud83dx",
    "high-then-escaped-char": b"\\ud83d\\u0041",
    "low-then-high-escape": b"\\ude00\\ud83d",
}
# Valid controls: (wire bytes, the text they mean).
CONTROLS = {
    "utf8": ("café 😀".encode(), "café 😀"),
    "pair-escape": (b"\\ud83d\\ude00", "\U0001F600"),
}
POSITIONS = ("start", "middle", "end")

# The base value of a string argument, by (tool, argument) then by argument; operation ids are made fresh.
BASE = {("datoms", "source"): "current", ("forget", "entity"): "victim"}
BASE_BY_NAME = {"entity": "ada", "attribute": "person/name", "value": "Victim", "text": "a plain note",
                "source": "torture", "key": "note-key", "query": "Ada", "index": "eavt", "cursor": "cursor",
                "prefix": "person/", "since": "24h", "facts": "a fact"}
# A string inside an object or array argument: the argument built around the value.
NESTED = {
    "q": lambda value: {"find": ["?e"], "where": [["?e", "person/name", value]]},
    "args": lambda value: {"?n": value},
    "facts": lambda value: [{"id": "fact-entity", "t/s": value}],
    "components": lambda value: [value],
}
NESTED_BASE = {"q": "Ada Lovelace", "args": "Ada Lovelace", "facts": "a fact", "components": "ada"}
QUERY = {"find": ["?n"], "where": [["?e", "person/name", "?n"]]}
QUERY_WITH_IN = {"find": ["?e"], "in": ["?n"], "where": [["?e", "person/name", "?n"]]}
# Where a control's value is stored by a successful remember, so it can be read back.
STORED_SLOTS = {("remember", "text", "direct"), ("remember", "key", "direct"), ("remember", "source", "direct"),
                ("remember", "facts", "nested")}

RESULTS: Counter = Counter()
FIGURES = {"longest_reply_ms": 0, "grid": 0}


def _insert(base: str, payload, position: str):
    cut = {"start": 0, "middle": len(base) // 2, "end": len(base)}[position]
    return base[:cut] + payload + base[cut:]


def _env() -> dict:
    return {key: value for key, value in os.environ.items() if not key.startswith("FGRAPH_")}


# -- the schema: which arguments take a string ---------------------------------------------------------
_ANNOTATIONS = {"title", "default", "description"}


def _accepts_string(schema: dict) -> bool:
    if not set(schema) - _ANNOTATIONS:            # {} or only annotations: anything goes
        return True
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    return any(_accepts_string(branch) for key in ("anyOf", "oneOf") for branch in schema.get(key, []))


def _holds_containers(schema: dict) -> bool:
    if not set(schema) - _ANNOTATIONS:
        return True
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds or "array" in kinds:
        return True
    return any(_holds_containers(branch) for key in ("anyOf", "oneOf") for branch in schema.get(key, []))


def slots(tools: list[dict]) -> list[tuple[str, str, str]]:
    """(tool, argument, "direct" | "nested") for every place a tool reads a string from its arguments."""
    found = []
    for tool in tools:
        for name, schema in tool["inputSchema"].get("properties", {}).items():
            if _accepts_string(schema):
                found.append((tool["name"], name, "direct"))
            if name in NESTED and _holds_containers(schema):
                found.append((tool["name"], name, "nested"))
    return found


# -- one call ------------------------------------------------------------------------------------------
class Basis:
    """What the valid parts of a call refer to: the latest tx (for if_basis_tx), a tx to undo, a counter."""

    def __init__(self, latest: int, scratch_tx: int):
        self.latest, self.scratch_tx, self.calls = latest, scratch_tx, 0

    def fresh(self) -> int:
        self.calls += 1
        return self.calls


def arguments(tool: dict, slot: tuple[str, str, str], value: str, basis: Basis, number: int) -> dict:
    """The tool's arguments: ``value`` (holding MARK) in the slot, the required others valid."""
    name, argument, form = tool["name"], slot[1], slot[2]
    built = {argument: NESTED[argument](value) if form == "nested" else value}
    schema = tool["inputSchema"]
    fillers = {"operation_id": f"op-{number}", "if_basis_tx": basis.latest, "tx": basis.scratch_tx,
               "entity": BASE.get((name, "entity"), "ada"), "query": "Ada",
               "q": QUERY_WITH_IN if argument == "args" else QUERY}
    for required in schema.get("required", []):
        if required not in built:
            built[required] = fillers.get(required, "x")
    if name == "remember" and argument not in ("text", "facts"):
        built["text"] = "a plain note"      # else remember has nothing to store and refuses the call
    if name == "forget" and argument == "value":
        built["attribute"] = "person/name"   # a value needs its attribute
    if name in ("query", "explain") and argument == "args" and "q" not in built:
        built["q"] = QUERY_WITH_IN
    return built


def base_value(name: str, argument: str, form: str, number: int) -> str:
    if argument == "operation_id":
        return f"op-{number}"
    if form == "nested":
        return NESTED_BASE[argument]
    return BASE.get((name, argument), BASE_BY_NAME.get(argument, "x"))


def call_line(request_id, tool: str, built: dict, payload: bytes) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": built}}
    line = json.dumps(message, ensure_ascii=False).encode("utf-8")
    assert line.count(MARK.encode()) == 1, line
    return line.replace(MARK.encode(), payload) + b"\n"


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


# -- the server ----------------------------------------------------------------------------------------
class Server:
    """One `fgraph mcp` on raw pipes: one request at a time, each reply read with a deadline."""

    def __init__(self, path, log, *extra: str):
        self.log_path = log
        self.log = open(log, "wb")
        self.proc = subprocess.Popen([FGRAPH, "--db", str(path), "mcp", *extra], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, env=_env())
        self.lines: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, line: bytes, request_id) -> tuple[dict | None, float]:
        """The reply to ``line`` (None when none came within the bound) and its time in ms."""
        started = time.monotonic()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        while True:
            left = REPLY_BOUND - (time.monotonic() - started)
            try:
                raw = self.lines.get(timeout=max(left, 0.001))
            except queue.Empty:
                return None, (time.monotonic() - started) * 1000
            if raw is None:
                return None, (time.monotonic() - started) * 1000
            reply = _json_rpc(raw)
            if "method" in reply and "id" not in reply:
                continue                          # a notification from the server: JSON-RPC, not a reply
            assert reply.get("id") == request_id, (request_id, reply)   # one reply per request, in turn
            return reply, (time.monotonic() - started) * 1000

    def start(self, client: str = "mcp-bytes") -> list[dict]:
        init = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": client, "version": "1"}}}
        reply, _ = self.ask(orjson.dumps(init) + b"\n", "init")
        assert reply is not None and "result" in reply, reply
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        reply, _ = self.ask(b'{"jsonrpc":"2.0","id":"tools","method":"tools/list"}\n', "tools")
        assert reply is not None and "result" in reply, reply
        return reply["result"]["tools"]

    def finish(self) -> tuple[int | None, str, list[dict]]:
        """Ping, end the input; (exit code, stderr, any line the server wrote after the ping's reply)."""
        reply, _ = self.ask(b'{"jsonrpc":"2.0","id":"last-ping","method":"ping"}\n', "last-ping")
        assert reply is not None and reply.get("result") == {}, reply
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=EXIT_BOUND)
        except subprocess.TimeoutExpired:
            RESULTS["hangs"] += 1
            self.proc.kill()
            code = self.proc.wait(timeout=EXIT_BOUND)
        self.reader.join(timeout=EXIT_BOUND)
        extra = []
        while not self.lines.empty():
            raw = self.lines.get()
            if raw is not None:
                extra.append(_json_rpc(raw))
        self.proc.stdout.close()
        self.log.close()
        with open(self.log_path, "rb") as log:
            return code, log.read().decode("utf-8", "replace"), extra

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=EXIT_BOUND)
        if not self.log.closed:
            self.log.close()


def _json_rpc(raw: bytes) -> dict:
    """A stdout line, which must be one JSON-RPC 2.0 message."""
    message = json.loads(raw)
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", raw[:500]
    assert "method" in message or ("id" in message and ("result" in message) != ("error" in message)), raw[:500]
    return message


# -- the store -----------------------------------------------------------------------------------------
def _control_entities() -> list[str]:
    """Entities named as a control entity value reads, so about/why/history find what they were sent."""
    base = BASE_BY_NAME["entity"]
    return sorted({_insert(base, text, position) for _, text in CONTROLS.values() for position in POSITIONS})


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcp-bytes") / "seed.db"
    with fgraph.connect(str(path)) as db:
        db.transact({"id": "ada", "person/name": "Ada Lovelace", "person/born": 1815}, by="seed")
        db.transact({"id": "note", "memory/text": "Ada prefers vim, café 😀"})
        db.transact({"id": "victim", "person/name": "Victim"})
        db.transact([{"id": name, "person/name": name} for name in _control_entities()])
        scratch_tx = db.transact({"id": "scratch", "t/s": "undo me"})["tx"]
    return path, scratch_tx


def _copy(seeded, tmp_path, name: str):
    path = tmp_path / name
    shutil.copyfile(seeded[0], path)
    return path


# -- the plan ------------------------------------------------------------------------------------------
def grid(found: list[tuple[str, str, str]]) -> list[tuple]:
    """Every (slot, payload class, position), hostile and control."""
    return [(slot, payload, position) for slot in found for payload in (*HOSTILE, *CONTROLS)
            for position in POSITIONS]


def plan(found: list[tuple[str, str, str]], server: str) -> list[tuple]:
    """Full size: the whole grid. Bounded: per slot three hostile calls and one control, then whatever
    (payload, position) pair the sample missed, so every class and every slot is sent at least once."""
    rows = grid(found)
    FIGURES["grid"] += len(rows)
    if FULL:
        return rows
    random = rng(f"mcp-bytes:{server}")
    chosen = []
    for slot in found:
        chosen += [(slot, random.choice(list(HOSTILE)), random.choice(POSITIONS)) for _ in range(3)]
        chosen.append((slot, random.choice(list(CONTROLS)), random.choice(POSITIONS)))
    covered = {(payload, position) for _, payload, position in chosen}
    for payload in (*HOSTILE, *CONTROLS):
        for position in POSITIONS:
            if (payload, position) not in covered:
                chosen.append((random.choice(found), payload, position))
    random.shuffle(chosen)
    return chosen


# -- the checks ----------------------------------------------------------------------------------------
def _note_time(ms: float) -> None:
    FIGURES["longest_reply_ms"] = max(FIGURES["longest_reply_ms"], round(ms))


def _call(server: Server, tool: dict, slot, wire: bytes, position: str, basis: Basis, label: str):
    """(line sent, reply, the slot's value around the mark) of one tools/call whose string slot
    carries ``wire`` at ``position``; a call left unanswered within the bound is a hang."""
    number = basis.fresh()
    request_id = number if number % 2 else f"call-{number}"   # both id kinds must come back
    base = base_value(tool["name"], slot[1], slot[2], number)
    value = _insert(base, MARK, position)
    line = call_line(request_id, tool["name"], arguments(tool, slot, value, basis, number), wire)
    reply, ms = server.ask(line, request_id)
    _note_time(ms)
    RESULTS["calls"] += 1
    if reply is None:
        RESULTS["hangs"] += 1
    assert reply is not None, ("no reply within the bound", tool["name"], slot, label, position, line)
    return line, reply, base


def send_hostile(server: Server, tool: dict, slot, payload: str, position: str, basis: Basis) -> None:
    line, reply, _ = _call(server, tool, slot, HOSTILE[payload], position, basis, payload)
    error = reply.get("error") or {}
    if error.get("code") != PARSE_ERROR:
        RESULTS["partial"] += 1     # a hostile value reached a tool
    assert error.get("code") == PARSE_ERROR and "nothing was done" in error.get("message", ""), (line, reply)
    RESULTS["refused"] += 1


def send_control(server: Server, tool: dict, slot, control: str, position: str, basis: Basis) -> dict | None:
    """The reply's tool result; a stored value to read back is recorded by the caller."""
    wire, text = CONTROLS[control]
    line, reply, base = _call(server, tool, slot, wire, position, basis, control)
    assert "error" not in reply, ("a valid value got a protocol error", line, reply)
    result = reply["result"]
    texts = [item.get("text", "") for item in result.get("content", [])]
    prefix = f"Error executing tool {tool['name']}"
    if result.get("isError"):
        # A crash is the SDK's bare prefix (the server logs its traceback); our errors say what to fix.
        described = bool(texts) and all(t.startswith(prefix + ": ") for t in texts)
        if not described:
            RESULTS["tracebacks"] += 1
        assert described, ("a control crashed", line, texts)
        RESULTS["served_tool_error"] += 1
    else:
        RESULTS["served_ok"] += 1
        basis.latest = max(basis.latest, result["structuredContent"]["basis_tx"])
    RESULTS["served"] += 1
    decoded = _insert(base, text, position)
    if (tool["name"], slot[1]) in (("about", "entity"), ("why", "entity"), ("history", "entity")):
        # a seeded entity bears this name: the read finds exactly what was sent
        assert not result.get("isError"), (line, texts)
        if tool["name"] == "about":
            assert result["structuredContent"]["data"]["person/name"] == decoded, (line, result)
        RESULTS["read_back"] += 1
    return {"result": result, "decoded": decoded, "line": line}


def _close(server: Server) -> None:
    code, err, extra = server.finish()
    if "Traceback" in err:
        RESULTS["tracebacks"] += 1
    assert "Traceback" not in err, err[-3000:]
    assert extra == [], extra           # exactly one reply per request
    assert code == 0, (code, err[-3000:])


def _run_session(path, tmp_path, label: str, extra: tuple, rows, basis: Basis, controls: bool, hostile: bool):
    """Send the rows of one kind through one session; the control outcomes of the tools it lists."""
    server = Server(path, tmp_path / f"{label}.log", *extra)
    outcomes = []
    try:
        tools = {tool["name"]: tool for tool in server.start()}
        for slot, payload, position in rows:
            if payload in HOSTILE and hostile:
                send_hostile(server, tools[slot[0]], slot, payload, position, basis)
            elif payload in CONTROLS and controls:
                outcomes.append((slot, send_control(server, tools[slot[0]], slot, payload, position, basis)))
        _close(server)
    finally:
        server.kill()
    return outcomes


def _tools(path, tmp_path, label: str, *extra: str) -> list[dict]:
    server = Server(path, tmp_path / f"{label}.log", *extra)
    try:
        tools = server.start()
        _close(server)
    finally:
        server.kill()
    return tools


def _events(path) -> list[dict]:
    with fgraph.connect(str(path), read_only=True) as db:
        return [orjson.loads(line) for line in db.iter_events()]


# -- the family ----------------------------------------------------------------------------------------
def test_read_only_server_refuses_every_hostile_string_and_serves_every_control(seeded, tmp_path):
    path = _copy(seeded, tmp_path, "ro.db")
    found = slots(_tools(path, tmp_path, "ro-list"))
    assert {"remember", "forget", "undo"}.isdisjoint(tool for tool, _, _ in found)
    assert {"recall", "about", "why", "history", "query", "datoms", "schema", "explain", "context"} <= {
        tool for tool, _, _ in found}
    rows = plan(found, "read-only")
    before = state(path)
    basis = Basis(before[0], seeded[1])
    _run_session(path, tmp_path, "ro", (), rows, basis, controls=True, hostile=True)
    assert state(path) == before


def test_write_server_refuses_every_hostile_string_stores_nothing_and_stores_controls_exactly(seeded, tmp_path):
    path = _copy(seeded, tmp_path, "rw.db")
    found = slots(_tools(path, tmp_path, "rw-list", "--write"))
    assert {"remember", "forget", "undo"} <= {tool for tool, _, _ in found}
    rows = plan(found, "write")
    before = state(path)
    events_before = _events(path)
    basis = Basis(before[0], seeded[1])
    # The hostile calls alone, in one session: nothing changes.
    _run_session(path, tmp_path, "rw-hostile", ("--write",), rows, basis, controls=False, hostile=True)
    if state(path) != before:
        RESULTS["partial"] += 1
    assert state(path) == before, "a refused call changed the database"
    # The controls, in another: each acknowledged write is there, with the exact text it was sent.
    outcomes = _run_session(path, tmp_path, "rw-controls", ("--write",), rows, basis, controls=True, hostile=False)
    written = [(slot, outcome) for slot, outcome in outcomes
               if slot[0] in ("remember", "forget", "undo") and not outcome["result"].get("isError")]
    events = _events(path)
    assert events[:len(events_before)] == events_before
    new = events[len(events_before):]
    if len(new) != len(written):
        RESULTS["lost"] += abs(len(written) - len(new))
    assert len(new) == len(written), ([slot for slot, _ in written], new)
    assert state(path)[0] == basis.latest
    stored = set()
    for event in new:
        stored.update(_strings(event))
    assert not any("\ufffd" in text for text in stored), "replacement characters were stored"
    for slot, outcome in written:
        if slot in STORED_SLOTS:
            if outcome["decoded"] not in stored:
                RESULTS["lost"] += 1
            assert outcome["decoded"] in stored, (outcome["line"], new)
            RESULTS["stored_exactly"] += 1
    remembered = [outcome for slot, outcome in outcomes if slot == ("remember", "text", "direct")]
    assert remembered, "no remember text control ran"   # the sample always holds one: one control per slot


def test_zz_mcp_bytes_summary():
    if not RESULTS["calls"]:
        pytest.skip("no mcp-bytes call in this selection")
    for verdict in ("lost", "partial", "tracebacks", "hangs"):
        assert RESULTS[verdict] == 0, (verdict, RESULTS)
    report("mcp-bytes", RESULTS, **FIGURES)


# -- issue 47 item 7: lines that once ended the server, and names longer than any name -----------------------
INVALID_REQUEST = -32600
LONG_NAME = "x" * 50_000


def _deep(depth: int, request_id) -> bytes:
    """A ping nested ``depth`` levels deep (the message and its params count), about 2 bytes a level."""
    inner = depth - 2
    return (orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"})[:-1] + b',"params":{"a":'
            + b"[" * inner + b"]" * inner + b"}}\n")


def _line_shapes() -> list[tuple[str, bytes, int, str, object]]:
    """(label, line, JSON-RPC code, words of the reason, the id the answer carries)."""
    from fgraph.core.limits import MCP_MESSAGE_BYTES
    over = b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"a":"' + b"y" * MCP_MESSAGE_BYTES + b'"}}\n'
    return [
        ("nested-900", _deep(900, "d900"), INVALID_REQUEST, "nested deeper than 100", "d900"),
        ("nested-1000", _deep(1000, "d1000"), INVALID_REQUEST, "nested deeper than 100", "d1000"),
        ("nested-100000", _deep(100_000, "d100000"), INVALID_REQUEST, "nested deeper than 100", None),
        ("nested-10MB", b"[" * 10_000_000 + b"\n", INVALID_REQUEST, "nested deeper than 100", None),
        ("garbage-10MB", b"x" * 10_000_000 + b"\n", PARSE_ERROR, "not JSON", None),
        ("over-the-limit", over, INVALID_REQUEST, f"line is longer than {MCP_MESSAGE_BYTES} bytes", None),
        ("invalid-utf8", b'{"jsonrpc":"2.0","id":"u","method":"ping","params":{"a":"\xff\xfe"}}\n', PARSE_ERROR,
         "not valid UTF-8", "u"),
    ]


def test_every_hostile_line_gets_its_json_rpc_error_and_the_server_keeps_answering(seeded, tmp_path):
    """Before: a 2 KB line nested 1,000 deep ended `fgraph mcp` (RecursionError) and 900 deep was
    refused as a "lone surrogate escape"."""
    path = _copy(seeded, tmp_path, "lines.db")
    before = state(path)
    server = Server(path, tmp_path / "lines.log")
    try:
        server.start()
        for number, (label, line, code, reason, request_id) in enumerate(_line_shapes()):
            started = time.monotonic()
            server.proc.stdin.write(line)
            server.proc.stdin.flush()
            raw = server.lines.get(timeout=REPLY_BOUND + 30)    # a 34 MB line takes a while to pipe
            assert raw is not None, (label, "the server ended")
            reply = _json_rpc(raw)
            _note_time((time.monotonic() - started) * 1000)
            error = reply.get("error") or {}
            assert (reply.get("id"), error.get("code")) == (request_id, code), (label, reply)
            assert reason in error.get("message", "") and "nothing was done" in error["message"], (label, reply)
            assert "surrogate" not in error["message"], (label, reply)
            RESULTS["refused"] += 1
            answer, _ = server.ask(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % number, number)
            assert answer is not None and answer.get("result") == {}, (label, "a later request went unanswered")
        _close(server)
    finally:
        server.kill()
    assert state(path) == before


#: every tool argument that is looked up or written as a name, and the error an over-long one gets
#: (reads: NotFound, as the published runtime; writes: TypeError)
NAME_CALLS = [
    ("about", {"entity": LONG_NAME}, "NotFound"),
    ("why", {"entity": LONG_NAME}, "NotFound"),
    ("why", {"entity": "ada", "attribute": "a/" + LONG_NAME}, "NotFound"),
    ("history", {"entity": LONG_NAME}, "NotFound"),
    ("history", {"entity": "ada", "attribute": "a/" + LONG_NAME}, "NotFound"),
    ("remember", {"facts": [{"id": LONG_NAME, "t/s": "x"}]}, "TypeError"),
    ("remember", {"facts": [{"id": "ada", "a/" + LONG_NAME: "x"}]}, "TypeError"),
    ("remember", {"text": "x", "key": LONG_NAME}, "TypeError"),
]   # forget is a retract: through an unknown name, a silent no-op (spec 03 §3), an over-long one too


def test_an_over_long_name_is_a_typed_error_in_every_tool_and_resource(seeded, tmp_path):
    """Before: `about`, `why`, `history` on a 50,000-character name were a traceback in the server
    (SQLite: "LIKE or GLOB pattern too complex"), and `remember` stored a 50,000-byte attribute name."""
    path = _copy(seeded, tmp_path, "names.db")
    before = state(path)
    server = Server(path, tmp_path / "names.log", "--write")
    try:
        tools = {tool["name"] for tool in server.start()}
        assert {name for name, _, _ in NAME_CALLS} <= tools
        for number, (tool, arguments, error) in enumerate(NAME_CALLS, start=1):
            if tool == "remember":
                arguments = {**arguments, "operation_id": f"long-{number}", "if_basis_tx": before[0]}
            line = orjson.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                                 "params": {"name": tool, "arguments": arguments}}) + b"\n"
            reply, ms = server.ask(line, number)
            _note_time(ms)
            assert reply is not None and "result" in reply, (tool, reply)
            texts = [item.get("text", "") for item in reply["result"]["content"]]
            assert reply["result"].get("isError") and texts, (tool, texts)
            assert texts[0].startswith(f"Error executing tool {tool}: "), (tool, texts[0][:300])
            assert "no name is longer than 512 UTF-8 bytes" in texts[0] and len(texts[0]) < 1000, (tool, texts[0][:300])
            # the text carries no error name: each kind says its own words
            assert {"NotFound": "was not found", "TypeError": "invalid "}[error] in texts[0], (tool, texts[0][:300])
            RESULTS["calls"] += 1
        for number, uri in enumerate(("fgraph://tx/" + LONG_NAME, "fgraph://entity/" + LONG_NAME, f"fgraph://entity/{LONG_NAME}?at={before[0]}"), start=100):
            reply, _ = server.ask(orjson.dumps({"jsonrpc": "2.0", "id": number, "method": "resources/read",
                                                "params": {"uri": uri}}) + b"\n", number)
            assert reply is not None, uri[:40]
            if "error" in reply:
                assert "no name is longer than 512 UTF-8 bytes" in reply["error"]["message"], reply["error"]["message"][:300]
            else:   # an unknown selector's page is empty, as for any name no entity bears
                assert json.loads(reply["result"]["contents"][0]["text"])["items"] == [], uri[:40]
        _close(server)
    finally:
        server.kill()
    assert state(path) == before
