"""One proposal/1 record: a write an agent proposed, as one canonical JSON line (issue 51,
docs/proposals.md P1).

A record carries the call (``tool``, ``arguments``), who made it (``by``, ``source``, the MCP
``client`` and ``session``), the store transaction it was planned on (``basis_tx``), when
(``proposed_at``), and the exact ``event/1`` line ``tail`` would have printed had it been
committed (``event``), with the BLAKE3 digest of those bytes (``event_digest``). The id is a
digest of the call alone, so an identical repeated call has the same id (idempotent).

Every line read back is hostile: bounded, the exact key set, the types, the digest, and the
event checked as ``apply`` checks a stream line; any failure is a ``FormatError`` naming the line.
"""

from __future__ import annotations

import re

from fgraph.core.canonical import dumps, dumps_bytes, loads
from fgraph.core.checks import is_strict_int
from fgraph.core.errors import FgraphError, FormatError
from fgraph.core.limits import (GENESIS_TX, INSTANT_MAX, INSTANT_MIN, INT64_MAX, MAX_EVENT_BYTES,
                                MAX_PROPOSAL_LINE_BYTES)

PROPOSAL_FORMAT = "proposal/1"
KEYS = frozenset({"fgraph", "id", "tool", "arguments", "by", "source", "client", "session", "basis_tx",
                  "proposed_at", "event", "event_digest"})
_ID = re.compile(r"\Ap-[0-9a-f]{24}\Z")
_DIGEST = re.compile(r"\Ablake3:[0-9a-f]{64}\Z")
_TEXT_LIMIT = 4096   # characters of a tool name, a client name or a session id
_FIX = ("a proposals file is written by `fgraph mcp --propose`; restore the line as it was written, or "
        "remove it (`fgraph proposals reject` removes a proposal properly)")


def _blake3_hex(data: bytes) -> str:
    from fgraph.streams.digest import hasher
    h = hasher()
    h.update(data)
    return str(h.hexdigest())


def looks_like_proposals(head: bytes) -> bool:
    """Whether a file's first bytes are those of a proposals file (a canonical proposal/1 record
    starts with its sorted first key; an event/1 line with ``{"asserted":``). A sniff only: every
    line is still checked by ``decode``."""
    return head.lstrip(b"\xef\xbb\xbf").startswith(b'{"arguments":')


def proposal_id(tool: str, arguments: dict) -> str:
    """``p-`` and the first 24 hex digits of the BLAKE3 of the canonical call."""
    return "p-" + _blake3_hex(dumps_bytes({"arguments": arguments, "tool": tool}))[:24]


def event_digest(event: bytes) -> str:
    """``blake3:<64 hex>`` of an event line's exact bytes (without its LF), as ``review --digest`` spells it."""
    return "blake3:" + _blake3_hex(event)


def make_record(*, tool: str, arguments: dict, by: str | None, source: str | None, client: str | None,
                session: str | None, basis_tx: int, proposed_at: int, event_line: bytes | str) -> dict:
    """The proposal/1 record of one planned call (``event_line``: the event/1 line without its LF)."""
    event = event_line.encode("utf-8") if isinstance(event_line, str) else bytes(event_line)
    event = event.rstrip(b"\n")
    record = {"fgraph": PROPOSAL_FORMAT, "id": proposal_id(tool, arguments), "tool": tool,
              "arguments": arguments, "by": by, "source": source, "client": client, "session": session,
              "basis_tx": basis_tx, "proposed_at": proposed_at, "event": event.decode("utf-8"),
              "event_digest": event_digest(event)}
    check(record)
    return record


def encode(record: dict) -> bytes:
    """The record as one canonical JSON line with its LF."""
    return dumps_bytes(record) + b"\n"


def decode(line: bytes, number: int) -> dict:
    """The checked record of proposals-file line ``number`` (its LF optional)."""
    body = line[:-1] if line.endswith(b"\n") else line
    if len(body) > MAX_PROPOSAL_LINE_BYTES:
        raise _bad(number, f"the line is over {MAX_PROPOSAL_LINE_BYTES} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(number, "the line is not UTF-8 text") from None
    try:
        record = loads(text)
    except FgraphError as exc:
        raise _bad(number, f"the line is not strict JSON ({exc.message})") from None
    try:
        check(record)
    except FgraphError as exc:
        raise _bad(number, exc.message) from None
    return record


def check(record: object) -> None:
    """A FormatError unless ``record`` is a well-formed proposal/1 record."""
    if not isinstance(record, dict) or record.get("fgraph") != PROPOSAL_FORMAT:
        raise FormatError(f"the record is not a {PROPOSAL_FORMAT} object")
    if set(record) != KEYS:
        missing, unknown = sorted(KEYS - set(record)), sorted(set(record) - KEYS)
        raise FormatError(f"the record's fields differ from {PROPOSAL_FORMAT}'s (missing {missing}, unknown {unknown})")
    tool, arguments = record["tool"], record["arguments"]
    if not isinstance(tool, str) or not 0 < len(tool) <= _TEXT_LIMIT:
        raise FormatError("tool must be a tool name")
    if not isinstance(arguments, dict):
        raise FormatError("arguments must be an object")
    for key in ("by", "source", "client", "session"):
        if record[key] is not None and not isinstance(record[key], str):
            raise FormatError(f"{key} must be text or null")
    for key in ("client", "session"):
        if record[key] is not None and len(record[key]) > _TEXT_LIMIT:
            raise FormatError(f"{key} is over {_TEXT_LIMIT} characters")
    if not _integer(record["basis_tx"], GENESIS_TX, INT64_MAX):
        raise FormatError("basis_tx must be a transaction id")
    if not _integer(record["proposed_at"], INSTANT_MIN, INSTANT_MAX):
        raise FormatError("proposed_at must be an instant in microseconds")
    if not isinstance(record["id"], str) or not _ID.match(record["id"]):
        raise FormatError("id must be p-<24 hex digits>")
    if record["id"] != proposal_id(tool, arguments):
        raise FormatError(f"id {record['id']} is not the id of its call (the tool or its arguments were edited)")
    event, digest = record["event"], record["event_digest"]
    if not isinstance(event, str) or not isinstance(digest, str) or not _DIGEST.match(digest):
        raise FormatError("event must be text and event_digest blake3:<64 hex digits>")
    raw = event.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_EVENT_BYTES or b"\n" in raw:
        raise FormatError("event must be one event/1 line within the event size cap")
    if event_digest(raw) != digest:
        raise FormatError("event_digest does not match event (the event was edited)")
    parsed = parse_event(record)
    if dumps(parsed) != event:
        raise FormatError("event is not a canonical event/1 line as `fgraph tail` prints it")
    for key in ("by", "source"):
        if parsed.get(key) != record[key]:
            raise FormatError(f"{key} differs from the event's {key}")


def parse_event(record: dict) -> dict:
    """The event/1 object of a record's event line, checked as ``apply`` checks a stream line."""
    from fgraph.streams.apply import parse_line
    try:
        return parse_line(1, record["event"].encode("utf-8", "surrogatepass"))
    except FgraphError as exc:
        message = exc.message[len("line 1: "):] if exc.message.startswith("line 1: ") else exc.message
        raise FormatError(f"event is not an event/1 line apply accepts ({message})") from None


def event_entities(record: dict) -> set[str]:
    """The entities the record's event asserts or retracts facts of, or creates: a name as is,
    an anonymous entity as its eid (the UUID text)."""
    event = loads(record["event"])
    found: set[str] = set()
    selectors = [item[0] for key in ("asserted", "retracted") for item in event.get(key, ())]
    for sel in [*event.get("created", ()), *selectors]:
        found.add(sel["eid"] if isinstance(sel, dict) else sel)
    return found


def _integer(value: object, low: int, high: int) -> bool:
    return is_strict_int(value) and low <= value <= high  # type: ignore[operator]  # is_strict_int proved int


def _bad(number: int, what: str) -> FormatError:
    error = FormatError(f"line {number} of the proposals file is not a {PROPOSAL_FORMAT} record: {what}", _FIX)
    error.line = number
    return error
