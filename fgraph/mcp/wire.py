"""The stdio wire of ``fgraph mcp``: newline-delimited JSON-RPC, vetted before the SDK reads it.

The SDK's stdio transport decodes stdin with ``errors="replace"``, so a request carrying invalid
UTF-8 reached a tool as U+FFFD and was stored as altered text; and it drops a line it cannot
parse without answering, so the client waits forever. This wire hands the SDK only lines that
are UTF-8 JSON holding one JSON-RPC message and answers every other line itself, with the
codes JSON-RPC 2.0 defines: ``-32700`` for bytes that are not UTF-8 JSON text (lone surrogates
included), ``-32600`` for JSON that is not one message (batches included: MCP 2025-06-18 has
none), for a line over ``MCP_MESSAGE_BYTES`` and for one nested deeper than ``MCP_MESSAGE_DEPTH``.
The id is echoed when it can be read, so the client's pending call ends; nothing a refused line
asks for is done. docs/mcp.md, decisions M7 and M9.

The depth is measured on the bytes before any parser sees them (``deeper_than``): the SDK's
parser refuses past 200 levels with a bare "invalid JSON", and the readings made to explain a
refusal recurse in Python, which a line 1,000 deep once turned into a RecursionError that ended
the server (issue 47 item 7).

As the SDK does, it serves from private duplicates of fd 0 and 1 and points those at
/dev/null and stderr meanwhile, so a stray print (an embedder's, a library's) cannot corrupt
the wire.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import operator
import os
import re
import sys
import threading

import anyio
import orjson
from mcp.server.stdio import stdio_server
from mcp.types import JSONRPCNotification, jsonrpc_message_adapter
from pydantic import ValidationError

from fgraph.core.checks import is_strict_int
from fgraph.core.limits import MCP_MESSAGE_BYTES, MCP_MESSAGE_DEPTH

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
_SKIP_CHUNK = 65536
_DEPTH_CHUNK = 1 << 16        # bytes of brackets measured at a time, so a deep line is refused early
_ESCAPE = re.compile(rb"\\.", re.S)     # an escape pair: \" never ends a string, \\ never starts one
_STRING = re.compile(rb'"[^"]*"')         # once escapes are gone, a string holds no quote
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = bytes.maketrans(b"[]{}", b"\x02\x00\x02\x00")   # an opening bracket 2, a closing one 0: minus 1 is the step
_SHAPE = ('a message is one JSON object with "jsonrpc": "2.0" and either a string "method" '
          '(with an "id" for a request) or an "id" with a "result" or an "error"')


class Replies:
    """The wire's writer. Each write is one whole line under a lock, so the SDK's answers and
    this wire's refusals, written from different threads, never interleave."""

    def __init__(self, raw) -> None:
        self._raw = raw
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        data = text.encode("utf-8")
        with self._lock:
            self._raw.write(data)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._raw.flush()

    def refuse(self, request_id, code: int, message: str) -> bool:
        """Answer a refused line; False when the client has gone (the wire then ends)."""
        line = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
        try:
            with self._lock:
                self._raw.write(line + b"\n")
                self._raw.flush()
        except (BrokenPipeError, ConnectionError, ValueError):
            return False
        return True


class Requests:
    """The wire's reader: ``readline`` returns the next acceptable line as text, answering the
    refused ones on the way, and ``""`` at the end of input (or when the client has gone)."""

    def __init__(self, raw, replies: Replies, limit: int = MCP_MESSAGE_BYTES) -> None:
        self._raw, self._replies, self._limit = raw, replies, limit

    def readline(self) -> str:
        while True:
            line = self._raw.readline(self._limit + 1)
            if not line:
                return ""
            if len(line) > self._limit and not line.endswith(b"\n"):
                self._skip_rest_of_line()
                refusal = (None, INVALID_REQUEST, f"Invalid Request: the line is longer than {self._limit} bytes "
                                                  "and was not read; nothing was done. Send smaller requests (a "
                                                  "remembered value holds at most 1 MiB).")
            else:
                refusal = self._vet(line)
            if refusal is None:
                return line.decode("utf-8")
            if refusal and not self._replies.refuse(*refusal):
                return ""

    def _skip_rest_of_line(self) -> None:
        while True:
            chunk = self._raw.readline(_SKIP_CHUNK)
            if not chunk or chunk.endswith(b"\n"):
                return

    def _vet(self, line: bytes):
        """None to pass the line on, ``()`` to ignore it (a blank line), else (id, code, message)."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return (_readable_id(line.decode("utf-8", errors="replace")), PARSE_ERROR,
                    f"Parse error: the message is not valid UTF-8 (byte {exc.start} is 0x{line[exc.start]:02x}); "
                    "nothing was done. Send the request as UTF-8 JSON.")
        if not text.strip():
            return ()
        if deeper_than(line, MCP_MESSAGE_DEPTH):
            return (_shallow_id(line), INVALID_REQUEST,
                    f"Invalid Request: the message is nested deeper than {MCP_MESSAGE_DEPTH} arrays and objects "
                    "and was not parsed; nothing was done. Send a flatter request.")
        try:
            message = jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValidationError as exc:
            return _refusal(text, exc)
        if isinstance(message, JSONRPCNotification) and "id" in orjson.loads(text):  # an id that is no id
            return (None, INVALID_REQUEST, "Invalid Request: an id is a string or an integer (MCP allows no null "
                                           "id); nothing was done.")
        return None


def _refusal(text: str, exc: ValidationError):
    request_id = _readable_id(text)
    invalid = [error for error in exc.errors() if error["type"] == "json_invalid"]
    if invalid:
        if _has_lone_surrogate(_lenient(text)):
            return (request_id, PARSE_ERROR, "Parse error: the message holds a lone surrogate escape (such as "
                                             "\\ud800), which is not text; nothing was done. Send whole "
                                             "characters (a surrogate pair, or the UTF-8 bytes).")
        reason = str(invalid[0].get("ctx", {}).get("error") or "not JSON")[:200]
        return (request_id, PARSE_ERROR, f"Parse error: the message is not JSON ({reason}); nothing was done. Send "
                                         "one JSON-RPC message as one JSON object per line.")
    if text.lstrip().startswith("["):
        return (None, INVALID_REQUEST, "Invalid Request: batches are not part of MCP; nothing was done. Send "
                                       "each message on its own line.")
    return (request_id, INVALID_REQUEST, f"Invalid Request: {_SHAPE}; nothing was done.")


def _lenient(text: str):
    """The document as Python's own parser reads it (lone surrogates allowed, ``NaN`` too), or None.
    Only a line no deeper than ``MCP_MESSAGE_DEPTH`` comes here; RecursionError is caught all the same."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _has_lone_surrogate(document) -> bool:
    """Does a lenient reading hold a lone surrogate (the one thing it accepts that is not text)?"""
    if document is None:
        return False
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):
        return False
    return False


def deeper_than(line: bytes, limit: int) -> bool:
    """Is the JSON text ``line`` nested more than ``limit`` arrays and objects deep? Measured on
    the bytes in linear time and bounded memory, with no parser: escape pairs and then strings are
    cut out (so a bracket inside a string never counts), then the running depth of the brackets
    left is summed chunk by chunk, stopping at the first chunk that goes past ``limit``."""
    if line.count(b"[") + line.count(b"{") <= limit:
        return False              # every ordinary message: fewer brackets than levels allowed
    brackets = _STRING.sub(b"", _ESCAPE.sub(b"", line)).translate(None, _NOT_BRACKET)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    depth = 0
    for start in range(0, len(brackets), _DEPTH_CHUNK):
        steps = brackets[start:start + _DEPTH_CHUNK].translate(_STEP)
        levels = list(itertools.accumulate(map(operator.sub, steps, itertools.repeat(1)), initial=depth))
        if max(levels) > limit:
            return True
        depth = levels[-1]
    return False


def _shallow_id(line: bytes):
    """The id of a line too deep to be read in Python: orjson reads up to 1,024 levels in C, and
    raises, never recursing in Python, past that; None when it cannot."""
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    request_id = document.get("id") if isinstance(document, dict) else None
    return request_id if isinstance(request_id, str) or is_strict_int(request_id) else None


def _readable_id(text: str):
    """The request's id when a lenient reading finds one, so the client's pending call can end."""
    document = _lenient(text)
    if isinstance(document, dict):
        request_id = document.get("id")
        if isinstance(request_id, str) or is_strict_int(request_id):
            return request_id
    return None


@contextlib.contextmanager
def _claimed(fd: int, mode: str, stream, divert):
    """A private duplicate of ``fd`` for the wire, with ``fd`` itself diverted while serving."""
    try:
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:  # not a descriptor we can duplicate: serve the stream in place
        yield stream.buffer
        return
    diversion = divert()
    os.dup2(diversion, fd)
    os.close(diversion)
    try:
        # never closed: a worker thread may still block reading it after the wire ends
        yield os.fdopen(private, mode, closefd=False)
    finally:
        os.dup2(private, fd)


def _descriptor(stream, default: int) -> int:
    """The descriptor ``stream`` writes to: not always 1, since a process that opened a Litestream replica
    keeps the real stdout on a private one (fgraph.core.replica.log_to_stderr)."""
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return default


@contextlib.asynccontextmanager
async def vetted_stdio(limit: int = MCP_MESSAGE_BYTES):
    """The SDK's stdio transport on this wire: yields its (read stream, write stream)."""
    with _claimed(0, "rb", sys.stdin, lambda: os.open(os.devnull, os.O_RDONLY)) as wire_in, \
            _claimed(_descriptor(sys.stdout, 1), "wb", sys.stdout, lambda: os.dup(2)) as wire_out:
        replies = Replies(wire_out)
        async with stdio_server(anyio.wrap_file(Requests(wire_in, replies, limit)),
                                anyio.wrap_file(replies)) as streams:
            yield streams
