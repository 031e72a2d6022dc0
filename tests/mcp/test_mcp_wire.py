"""The vetted stdio wire of ``fgraph mcp`` (issue 29 items 2 and 14, docs/mcp.md M7): only UTF-8
JSON holding one JSON-RPC message reaches the SDK; every other line is answered with the JSON-RPC
code for it, its id echoed when it can be read, and nothing it asks for is done."""

from __future__ import annotations

import io
import json
import subprocess
import threading

import orjson
import pytest

import fgraph
from fgraph.mcp.wire import INVALID_REQUEST, PARSE_ERROR, Replies, Requests
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.mcp import OURS, server_env

INITIALIZE = ('{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18",'
              '"capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}')
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'


def _vet(*lines: bytes, limit: int = 1 << 20):
    """The lines handed on and the refusals written, for raw input lines."""
    out = io.BytesIO()
    requests = Requests(io.BytesIO(b"".join(lines)), Replies(out), limit)
    passed = list(iter(requests.readline, ""))
    refusals = [orjson.loads(line) for line in out.getvalue().splitlines()]
    return passed, [(r["id"], r["error"]["code"]) for r in refusals], refusals


def remember(request_id: int, text: bytes) -> bytes:
    return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"remember","arguments":'
            b'{"operation_id":"op-%d","text":"%s"}}}\n' % (request_id, request_id, text))


@pytest.mark.parametrize("text", [b"caf\xe9 \xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\xf8\x88\x80\x80\x80"])
def test_invalid_utf8_is_a_parse_error_that_names_the_byte_and_keeps_the_id(text):
    passed, refusals, bodies = _vet(remember(7, text))
    assert passed == [] and refusals == [(7, PARSE_ERROR)]
    assert "not valid UTF-8 (byte" in bodies[0]["error"]["message"]


@pytest.mark.parametrize("escape", [b"\\\\ud800", b"\\\\udfff", b"x\\\\ud83dy"])
def test_a_lone_surrogate_escape_is_a_parse_error(escape):
    passed, refusals, bodies = _vet(remember(8, escape.replace(b"\\\\", b"\\")))
    assert passed == [] and refusals == [(8, PARSE_ERROR)]
    assert "lone surrogate" in bodies[0]["error"]["message"]


def test_a_surrogate_pair_and_plain_text_pass_unchanged():
    lines = [remember(1, b"\\ud83d\\ude00"), remember(2, "café 😀".encode()), b'{"jsonrpc":"2.0","id":3,"method":"ping"}\r\n']
    passed, refusals, _ = _vet(*lines)
    assert refusals == [] and passed == [line.decode() for line in lines]


@pytest.mark.parametrize("line, expected", [
    (b"garbage\n", (None, PARSE_ERROR)),
    (b'{"jsonrpc":"2.0","id":2\n', (None, PARSE_ERROR)),
    (b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]\n', (None, INVALID_REQUEST)),
    (b"[]\n", (None, INVALID_REQUEST)),
    (b"42\n", (None, INVALID_REQUEST)),
    (b'{"jsonrpc":"2.0","id":4}\n', (4, INVALID_REQUEST)),
    (b'{"id":5,"method":"ping"}\n', (5, INVALID_REQUEST)),
    (b'{"jsonrpc":"1.0","id":"six","method":"ping"}\n', ("six", INVALID_REQUEST)),
    (b'{"jsonrpc":"2.0","id":6,"method":7}\n', (6, INVALID_REQUEST)),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n', (None, INVALID_REQUEST)),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n', (None, INVALID_REQUEST)),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n', (None, INVALID_REQUEST)),
])
def test_malformed_messages_get_the_json_rpc_code(line, expected):
    passed, refusals, bodies = _vet(line)
    assert passed == [] and refusals == [expected]
    assert "nothing was done" in bodies[0]["error"]["message"]


def test_blank_lines_are_ignored_and_notifications_and_responses_pass():
    lines = [b"\n", b"   \r\n", INITIALIZED.encode() + b"\n", b'{"jsonrpc":"2.0","id":9,"result":{}}\n']
    passed, refusals, _ = _vet(*lines)
    assert refusals == [] and passed == [line.decode() for line in lines[2:]]


def test_an_oversized_line_is_refused_unread_and_the_next_line_is_served():
    passed, refusals, bodies = _vet(b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"' + b"y" * 5000 + b'"}\n',
                                    b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n', limit=1000)
    assert refusals == [(None, INVALID_REQUEST)] and "line is longer than 1000 bytes" in bodies[0]["error"]["message"]
    assert passed == ['{"jsonrpc":"2.0","id":2,"method":"ping"}\n']


def test_a_client_gone_before_the_refusal_ends_the_input():
    class Gone(io.BytesIO):
        def write(self, data):
            raise BrokenPipeError

    requests = Requests(io.BytesIO(b"garbage\n" + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'), Replies(Gone()))
    assert requests.readline() == ""


def _serve(path, lines: list[bytes], *extra: str) -> list[dict]:
    """Every reply up to the answer to the last line's id; stdin stays open until then, since a
    server is free to drop work still in flight when its client hangs up."""
    last_id = json.loads(lines[-1])["id"]
    proc = subprocess.Popen([OURS, "--db", str(path), "mcp", *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=server_env())
    proc.stdin.write(b"".join(lines))
    proc.stdin.flush()
    replies, watchdog = [], threading.Timer(120, proc.kill)  # a hang fails instead of blocking the suite
    watchdog.start()
    for line in proc.stdout:
        replies.append(json.loads(line))  # stdout carries JSON-RPC only
        if replies[-1].get("id") == last_id:
            break
    _, err = proc.communicate(timeout=120)  # closes stdin: the client hangs up
    watchdog.cancel()
    assert proc.returncode == 0 and b"Traceback" not in err
    return replies


def test_remember_with_altered_bytes_stores_nothing_and_the_server_keeps_serving(tmp_path):
    path = tmp_path / "w.db"
    fgraph.connect(str(path), clock=CONFORMANCE_CLOCK).close()
    before = path.read_bytes()
    hostile = [remember(7, b"caf\xe9 \xff"), remember(8, b"\\ud800"), remember(9, b"\xc0\xaf"), b"garbage\n",
               b'[{"jsonrpc":"2.0","id":10,"method":"ping"}]\n']
    replies = _serve(path, [INITIALIZE.encode() + b"\n", INITIALIZED.encode() + b"\n", *hostile,
                            b'{"jsonrpc":"2.0","id":11,"method":"ping"}\n'], "--write")
    by_id = {r["id"]: r for r in replies if r["id"] is not None}
    assert [by_id[i]["error"]["code"] for i in (7, 8, 9)] == [PARSE_ERROR] * 3
    assert sorted(r["error"]["code"] for r in replies if r["id"] is None) == [PARSE_ERROR, INVALID_REQUEST]
    assert by_id[11]["result"] == {}
    assert path.read_bytes() == before  # no transaction, no note, no altered text
    with fgraph.connect(str(path), read_only=True) as db:
        assert db.latest_tx() == 64 and list(db.iter_events()) == []


def test_the_same_text_sent_as_utf8_is_stored_exactly(tmp_path):
    path = tmp_path / "w.db"
    fgraph.connect(str(path), clock=CONFORMANCE_CLOCK).close()
    replies = _serve(path, [INITIALIZE.encode() + b"\n", INITIALIZED.encode() + b"\n",
                            remember(7, "café ÿ \U0001F600".encode())], "--write")
    assert not replies[-1]["result"].get("isError")
    with fgraph.connect(str(path), read_only=True) as db:
        events = [orjson.loads(line) for line in db.iter_events()]
    assert [fact[2] for fact in events[0]["asserted"] if fact[1] == "memory/text"] == ["café ÿ \U0001F600"]


# -- issue 47 item 7: nesting is measured before any parser reads the line (decision M9) ----------------
def _nested(depth: int, request_id=5) -> bytes:
    """A ping whose params hold arrays so that the whole message is ``depth`` levels deep."""
    inner = depth - 2                      # the message object and its params object
    return (b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"a":' % request_id
            + b"[" * inner + b"]" * inner + b"}}\n")


def test_depth_is_measured_exactly_and_brackets_in_strings_do_not_count():
    from fgraph.core.limits import MCP_MESSAGE_DEPTH
    from fgraph.mcp.wire import deeper_than
    assert not deeper_than(_nested(MCP_MESSAGE_DEPTH), MCP_MESSAGE_DEPTH)
    assert deeper_than(_nested(MCP_MESSAGE_DEPTH + 1), MCP_MESSAGE_DEPTH)
    quoted = b'{"a":"' + b"[{" * 5000 + b'","b":"\\"[[[","c":"\\\\","d":[[1]]}'
    assert not deeper_than(quoted, 3) and deeper_than(quoted, 2)
    assert deeper_than(b"[" * 10_000_000, MCP_MESSAGE_DEPTH)              # a 10 MB line, refused at its start
    assert not deeper_than(b"[" + b"[]," * 100_000 + b"[]]", MCP_MESSAGE_DEPTH)   # wide is not deep


@pytest.mark.parametrize("depth", [101, 200, 900, 1000, 2000, 100_000])
def test_a_line_nested_too_deep_is_refused_with_that_reason_and_the_next_is_served(depth):
    passed, refusals, bodies = _vet(_nested(depth), b'{"jsonrpc":"2.0","id":6,"method":"ping"}\n')
    expected_id = 5 if depth <= 1000 else None     # orjson reads the id up to about 1,024 levels, in C
    assert refusals == [(expected_id, INVALID_REQUEST)], (depth, bodies)
    message = bodies[0]["error"]["message"]
    assert "nested deeper than 100 arrays and objects" in message and "nothing was done" in message
    assert "surrogate" not in message
    assert passed == ['{"jsonrpc":"2.0","id":6,"method":"ping"}\n']


def test_a_message_at_the_depth_limit_is_served():
    passed, refusals, _ = _vet(_nested(100))
    assert refusals == [] and len(passed) == 1


@pytest.mark.parametrize("line", [b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":tru}}\n',
                                  b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":[1,]}}\n'])
def test_a_parse_error_gives_the_parsers_reason_not_a_surrogate(line):
    passed, refusals, bodies = _vet(line)
    message = bodies[0]["error"]["message"]
    assert passed == [] and refusals[0][1] == PARSE_ERROR
    assert message.startswith("Parse error: the message is not JSON (") and "surrogate" not in message
