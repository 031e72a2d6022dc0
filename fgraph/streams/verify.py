"""verify: check a snapshot or an event stream file without a database.

It reads the file once, line by line, and reports what the file is (kind, basis,
counts) or exactly what is wrong and on which line: structure, canonical form,
per-event hashes (snapshot receipts), footer digest and counts.
"""

from __future__ import annotations

import hashlib
import re

from fgraph.streams.apply import MAX_EVENT_BYTES, validate_record
from fgraph.streams.lines import iter_lines
from fgraph.core.canonical import dumps, loads
from fgraph.core.checks import strict_int
from fgraph.core.identity import INSTANT_MAX, INSTANT_MIN, check_event_uuid
from fgraph.core.errors import Conflict, FgraphError, FormatError, TooLarge, ValueTypeError
from fgraph.streams.restore.run import FOOTER_KEYS, HEADER_KEYS, MAX_LINE_BYTES, RECEIPT_KEYS


def _decode(number: int, line, cap: int):
    raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    body = raw.rstrip(b"\r")
    if len(body) > cap:
        raise TooLarge(f"over {cap} bytes", "the file is not a valid stream").at_line(number)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError("not valid UTF-8", "streams are UTF-8 text").at_line(number) from None
    return text, body


def verify(source) -> dict:
    """Describe a whole, valid stream or raise the typed error naming the first bad line."""
    lines = iter_lines(source, max_bytes=MAX_LINE_BYTES)
    first = next(lines, None)
    if first is None:
        raise ValueTypeError("the file is empty", "pass a snapshot or an event stream")
    number, line = first
    text, _ = _decode(number, line, MAX_LINE_BYTES)
    try:
        record = loads(text)
    except FgraphError as exc:
        raise exc.at_line(number) from None
    if isinstance(record, dict) and record.get("fgraph") == "snapshot/1":
        return _verify_snapshot(record, text, number, lines)
    return _verify_events(record, text, number, lines)


#: event UUIDs remembered to find one repeated (about 100 bytes each): past this many, not checked
SEEN_EVENTS = 500_000
STUB_KEYS = frozenset({"at", "event", "event_hash", "fgraph", "redacted"})
EXCISION_KEYS = frozenset({"asserted", "at", "created", "event", "fgraph", "redacted", "redacts", "retracted"})
#: what an event/1 file cannot show, said in every report (decision V1 in docs/snapshot.md)
EVENT_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
UNCHECKED = ("an event/1 line carries no hash of its own: an edit that leaves it a valid event is found only "
             "against its hash chain (verify-stream --chain) or the store that wrote it (review)")


def _verify_events(record, text, number, lines) -> dict:
    count, noncanonical, stubs, first_event, last_event = 0, 0, 0, None, None
    seen: dict[int, int] = {}   # the first SEEN_EVENTS event UUIDs (as integers) and their lines
    item = (number, record, text)
    while item is not None:
        number, record, text = item
        try:
            stub = _check_event(record)
        except FgraphError as exc:
            raise exc.at_line(number) from None
        stubs += stub
        noncanonical += dumps(record) != text.strip()
        count += 1
        event = record["event"]
        key = int(event.replace("-", ""), 16)
        if key in seen:
            raise Conflict(f"event {event} repeats line {seen[key]}",
                           "the stream was collected twice over (a collector restarted from an earlier place: "
                           "resume with tail --cursor, --after or --chain); keep the first").at_line(number)
        if len(seen) < SEEN_EVENTS:
            seen[key] = number
        first_event = first_event or event
        last_event = event
        item = _next(lines, MAX_EVENT_BYTES)
    unchecked = [UNCHECKED]
    if stubs:
        unchecked.append(f"{stubs} redacted stubs: their event_hash names a payload the file no longer holds")
    if count > SEEN_EVENTS:
        unchecked.append(f"repeats among the {count - SEEN_EVENTS} events after the first {SEEN_EVENTS}")
    return {"canonical": noncanonical == 0, "events": count, "first_event": first_event, "kind": "event/1",
            "last_event": last_event, "noncanonical_lines": noncanonical, "ok": True, "redacted": stubs,
            "unchecked": unchecked}


def _check_event(record) -> bool:
    """An event as apply would take it (False), or what tail prints for an excision (spec 07): the
    redacted stub of an excised event (True) or the excision event itself (False)."""
    if isinstance(record, dict) and record.get("redacted") is True and set(record) in (STUB_KEYS, EXCISION_KEYS):
        check_event_uuid(record["event"], "event")
        strict_int(record["at"], "at {value!r} is not an instant", "the file is damaged", low=INSTANT_MIN,
                   high=INSTANT_MAX)
        if set(record) == STUB_KEYS:
            if record["fgraph"] != "event/1" or not isinstance(record["event_hash"], str) \
                    or not re.fullmatch(r"[0-9a-f]{64}", record["event_hash"]):
                raise ValueTypeError("a redacted stub must be event/1 with a 64-digit hex event_hash",
                                     "the file is damaged")
            return True
        redacts = record["redacts"]
        if record["fgraph"] != "event/1" or (record["asserted"], record["created"], record["retracted"]) != ([], [], []) \
                or not isinstance(redacts, list) or not redacts or redacts != sorted(set(redacts)) \
                or not all(isinstance(uuid, str) and EVENT_UUID.fullmatch(uuid) for uuid in redacts):
            raise ValueTypeError("an excision event must be event/1 with empty asserted, created and retracted "
                                 "and redacts its sorted, unique, lowercase event UUIDs", "the file is damaged")
        return False
    validate_record(record)
    return False


def _next(lines, cap):
    found = next(lines, None)
    if found is None:
        return None
    number, line = found
    text, _ = _decode(number, line, cap)
    try:
        return number, loads(text), text
    except FgraphError as exc:
        raise exc.at_line(number) from None


def _verify_snapshot(header, text, number, lines) -> dict:
    if not HEADER_KEYS <= set(header) or header.get("format") != 2:
        raise ValueTypeError("not a snapshot/1 format 2 header", "the file is damaged").at_line(number)
    digest = hashlib.sha256(dumps(header).encode() + b"\n")
    receipts = facts = 0
    last_event = None
    footer = None
    while (item := _next(lines, MAX_LINE_BYTES)) is not None:
        number, record, text = item
        if footer is not None:
            raise ValueTypeError("a record follows the footer", "the file is damaged").at_line(number)
        if isinstance(record, dict) and record.get("fgraph") == "end":
            footer = (number, record)
            continue
        if isinstance(record, dict) and set(record) == {"receipt"}:
            if facts:
                raise ValueTypeError("a receipt follows a fact", "the file is damaged").at_line(number)
            _check_receipt(number, record["receipt"])
            receipts += 1
            last_event = record["receipt"]["event"]
        elif isinstance(record, dict) and set(record) == {"fact"} and isinstance(record["fact"], list) \
                and len(record["fact"]) == 6:
            facts += 1
        else:
            raise ValueTypeError("neither a receipt, a fact nor the footer", "the file is damaged").at_line(number)
        digest.update(dumps(record).encode() + b"\n")
    if footer is None:
        raise ValueTypeError("the snapshot has no footer (truncated?)", "take a new snapshot")
    number, record = footer
    if not FOOTER_KEYS <= set(record) or record["receipts"] != receipts or record["facts"] != facts:
        raise ValueTypeError("the footer counts do not match the body "
                             f"({receipts} receipts, {facts} facts)", "the file is damaged").at_line(number)
    if record["sha256"] != digest.hexdigest():
        raise Conflict("the footer digest does not match the records", "the file was altered").at_line(number)
    if header["basis"] != (last_event or "00000000-0000-4000-8000-000000000040"):
        raise Conflict("line 1: the header basis is not the last receipt's event", "the file was altered")
    return {"basis": header["basis"], "created_at": header["created_at"], "facts": facts, "kind": "snapshot/1",
            "ok": True, "receipts": receipts, "sha256": record["sha256"]}


def _check_receipt(number: int, receipt) -> None:
    if not isinstance(receipt, dict) or set(receipt) != RECEIPT_KEYS:
        raise ValueTypeError("a receipt must have exactly the 8 receipt keys", "the file is damaged").at_line(number)
    payload = receipt["event_data"]
    if payload is not None and hashlib.sha256(dumps(payload).encode()).hexdigest() != receipt["event_hash"]:
        raise ValueTypeError(f"event {receipt['event']} does not hash to its event_hash",
                             "the file was altered").at_line(number)
