"""The MCP resource templates (spec 10 §6): ``entity``, ``tx``, ``changes``, ``event`` and
``schema``, each a JSON body of at most 256 KiB, paged with a ``next_uri`` whose cursor binds
the first page's basis and the request's parameters.

Bodies are built from ``Db`` reads only; the SDK wiring is in ``fgraph.mcp.server``.
"""

from __future__ import annotations

import base64
import contextlib
import re
import urllib.parse

from fgraph.core.canonical import dumps_bytes, loads
from fgraph.core.errors import NotFound, TooLarge, ValueTypeError
from fgraph.core.limits import (
    CONTEXT_BUDGET,
    CONTEXT_LIMIT,
    GENESIS_TX,
    MCP_CHANGES_BYTES,
    MCP_CHANGES_EVENTS,
    MCP_EVENT_CHUNK,
    MCP_PAGE_LIMIT,
    MCP_RECEIPT_FACTS,
    MCP_RESPONSE_BYTES,
)
from fgraph.core.timespec import duration_us
from fgraph.mcp.tools import make_cursor, read_cursor

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
CANONICAL_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
DIGITS = re.compile(r"^[0-9]+\Z")


def body(data: dict) -> dict:
    if len(dumps_bytes(data)) > MCP_RESPONSE_BYTES:
        raise TooLarge(f"MCP resource exceeds {MCP_RESPONSE_BYTES // 1024} KiB", "request a narrower page")
    return data


def _query(**parameters) -> str:
    given = [(k, v) for k, v in parameters.items() if v is not None]
    return ("?" + urllib.parse.urlencode(given, quote_via=urllib.parse.quote, safe="")) if given else ""


class Resources:
    """The resource bodies of one server over one open ``Db`` (calls serialized by ``lock``)."""

    def __init__(self, db, lock):
        self.db, self.lock = db, lock

    # -- entity -------------------------------------------------------------------
    def entity(self, selector: str, at=None, cursor=None) -> dict:
        ref = int(selector) if re.fullmatch(r"-?[0-9]+", selector) else selector
        with self.lock:
            view = self.db if at is None else self.db.at(_time(at))
            try:
                page = view.at(view.latest_tx()).datoms("eavt", [ref], limit=MCP_PAGE_LIMIT, cursor=cursor)
            except NotFound:
                return body({"basis_tx": view.latest_tx(), "items": []})
            out = {"basis_tx": page["basis_tx"], "items": page["items"]}
            if page["next_cursor"]:
                out["next_uri"] = (f"fgraph://entity/{urllib.parse.quote(selector, safe='')}"
                                   + _query(at=at, cursor=page["next_cursor"]))
            return body(out)

    # -- tx -----------------------------------------------------------------------
    def tx(self, selector: str) -> dict:
        if UUID.match(selector):
            ref = {"eid": selector.lower()}
        elif DIGITS.match(selector):
            ref = int(selector)
        else:
            ref = selector
        with self.lock:
            view = self.db.at(self.db.latest_tx())
            tx = view.resolve(ref)
            receipt = view.receipt(tx)
            facts = receipt["facts"]
            receipt["facts"] = facts[:MCP_RECEIPT_FACTS]
            receipt["truncated"] = len(facts) > MCP_RECEIPT_FACTS
            return body(receipt)

    # -- changes --------------------------------------------------------------------
    def changes(self, since=None, cursor=None) -> dict:
        raw_since = "64" if since is None else since
        # ours besides the published decimal: an event UUID, an RFC 3339 time or a duration (core/timepoints)
        window = not DIGITS.match(raw_since) and (duration_us(raw_since) is not None or _point(raw_since))
        if not window and (not DIGITS.match(raw_since) or int(raw_since) < GENESIS_TX or int(raw_since) >= 2 ** 63):
            raise ValueTypeError("changes since must be a transaction at or after genesis, an event UUID, "
                                 "an RFC 3339 time or a duration",
                                 "pass since=64, a later transaction id, an event UUID, a time or a duration such as 24h")
        arguments = {"since": raw_since}
        with self.lock:
            basis = self.db.latest_tx()
            position = self.db.resolve_time(raw_since, since=True) if window else int(raw_since)
            if cursor is not None:
                basis, position = read_cursor(cursor, "changes", arguments, self.db.latest_tx())
            events, out = [], {"basis_tx": basis, "events": []}
            with contextlib.closing(self.db.iter_events(position, basis)) as lines:
                position = self._page(lines, events, out, position, basis)
            if self._more(position, basis):
                out["next_uri"] = "fgraph://changes" + _query(
                    since=raw_since, cursor=make_cursor("changes", arguments, basis, position))
            return body(out)

    def _page(self, lines, events: list, out: dict, position: int, basis: int) -> int:
        """Fill ``events`` (at most ``MCP_CHANGES_EVENTS`` of ``MCP_CHANGES_BYTES`` together); returns
        the tx read through."""
        size = 0
        for line in lines:
            length = len(line.encode("utf-8"))
            record = loads(line)
            if length > MCP_CHANGES_BYTES:
                if events:
                    break
                out["oversized_event"] = self._oversized(record, length, basis)
                position = self._tx_of(record)
                break
            if len(events) == MCP_CHANGES_EVENTS or size + length > MCP_CHANGES_BYTES:
                break
            events.append(record)
            size += length
            position = self._tx_of(record)
        out["events"] = events
        return position

    def _more(self, position: int, basis: int) -> bool:
        with contextlib.closing(self.db.iter_events(position, basis)) as rest:
            return next(rest, None) is not None

    def _tx_of(self, record: dict) -> int:
        return self.db.at(self.db.latest_tx()).resolve({"eid": record["event"]})

    def _oversized(self, record: dict, length: int, basis: int) -> dict:
        digest = self.db.receipt(self._tx_of(record))["event_hash"].split(":", 1)[1]
        return {"event": record["event"], "event_hash": digest, "bytes": length,
                "uri": f"fgraph://event/{record['event']}?basis={basis}&offset=0&digest={digest}"}

    # -- event ------------------------------------------------------------------------
    def event(self, event: str, basis=None, offset=None, digest=None) -> dict:
        if not CANONICAL_UUID.match(event):
            raise ValueTypeError("event id must be a canonical RFC 4122 UUID", "use the lowercase event UUID")
        basis_tx = _decimal(basis, "event basis")
        if digest is None or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ValueTypeError("event digest must be 64 lowercase hex digits", "use the digest of next_uri")
        start = 0 if offset is None else _decimal(offset, "event offset")
        with self.lock:
            latest = self.db.latest_tx()
            if not GENESIS_TX <= basis_tx <= latest:
                raise ValueTypeError(f"event basis {basis_tx} is outside its valid range", "use the basis of next_uri")
            view = self.db.at(basis_tx)
            try:
                view.receipt(basis_tx)
            except NotFound:
                raise ValueTypeError(f"event basis {basis_tx} must identify a transaction receipt",
                                     "use the basis of next_uri") from None
            try:
                tx = view.resolve({"eid": event})
                receipt = view.receipt(tx)
            except NotFound:
                raise NotFound(f"event {event} is not visible at basis {basis_tx}", "use a later basis") from None
            if receipt["event_hash"] != "sha256:" + digest:
                raise ValueTypeError(f"event digest does not match the pinned event receipt of {event}",
                                     "use the digest of next_uri")
            with contextlib.closing(view.iter_events(tx - 1, tx)) as lines:
                line = next(lines, None)
            if line is None or loads(line).get("redacted"):
                raise NotFound(f"event payload is unavailable because the event {event} was excised",
                               "the event's facts are gone by design")
            payload = line.encode("utf-8")
            if start >= len(payload):
                raise ValueTypeError(f"event offset {start} is outside the canonical event payload",
                                     f"use an offset below {len(payload)}")
            chunk = payload[start:start + MCP_EVENT_CHUNK]
            out = {"basis_tx": basis_tx, "event": event, "event_hash": digest, "offset": start,
                   "encoding": "base64", "data": base64.b64encode(chunk).decode()}
            if start + MCP_EVENT_CHUNK < len(payload):
                out["next_uri"] = (f"fgraph://event/{event}?basis={basis_tx}&offset={start + MCP_EVENT_CHUNK}"
                                   f"&digest={digest}")
            return body(out)

    # -- schema -------------------------------------------------------------------------
    def schema(self, prefix=None, cursor=None) -> dict:
        arguments = {"include_system": False, "prefix": prefix}
        with self.lock:
            basis, offset = self.db.latest_tx(), 0
            if cursor is not None:
                basis, offset = read_cursor(cursor, "schema", arguments, self.db.latest_tx())
            page = self.db.at(basis).schema(prefix)
            items = [("attributes", a) for a in page["attributes"]] + [("shapes", s) for s in page["shapes"]]
            chosen = items[offset:offset + MCP_PAGE_LIMIT]
            out = {"basis_tx": basis, "digest": page["digest"],
                   "attributes": [item for kind, item in chosen if kind == "attributes"],
                   "shapes": [item for kind, item in chosen if kind == "shapes"]}
            if offset + MCP_PAGE_LIMIT < len(items):
                out["next_uri"] = "fgraph://schema" + _query(
                    prefix=prefix, cursor=make_cursor("schema", arguments, basis, offset + MCP_PAGE_LIMIT))
            return body(out)


    # -- context ------------------------------------------------------------------------
    def context(self, since=None, budget=None, limit=None, by=None, type=None) -> dict:
        with self.lock:
            view = self.db.at(self.db.latest_tx())
            chars = CONTEXT_BUDGET if budget is None else _decimal(budget, "context budget")
            items = CONTEXT_LIMIT if limit is None else _decimal(limit, "context limit")
            # the last line names the URI that gets the rest (fgraph://changes, or this template)
            return body(view.context(None if since is None else _time(since), chars, limit=items,
                                     by="entity" if by is None else by, type=type, more_hint="resource"))


def _time(at: str):
    return int(at) if DIGITS.match(at) else at


def _point(text: str) -> bool:
    """An event UUID or an RFC 3339 time (what resolve_time reads besides integers and durations)."""
    if UUID.match(text):
        return True
    from fgraph.core.values import parse_instant
    try:
        parse_instant(text)
    except ValueTypeError:
        return False
    return True


def _decimal(raw, what: str) -> int:
    if raw is None or not DIGITS.match(raw) or (len(raw) > 1 and raw[0] == "0"):
        raise ValueTypeError(f"{what} must be a canonical decimal integer", "use the value of next_uri")
    return int(raw)
