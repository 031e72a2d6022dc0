"""The MCP tools' bodies (spec 10 §3–§5): bounds checked before any work, one library call on
a view pinned to one basis, the ``{"ok", "basis_tx", "data"}`` envelope and its 256 KiB cap.

Each tool is declared once, in ``fgraph.mcp.specs``: a method here is named after its tool,
takes the table's arguments by name, and begins by checking the table's bounds. The SDK wiring
is ``fgraph.mcp.registry`` and ``fgraph.mcp.server``; this module knows nothing of it, so every
rule here is testable without a client. Every bound and cap (``MCP_RESPONSE_BYTES``, the pages,
the cursor's length) is ``fgraph.core.limits``'.
"""

from __future__ import annotations

import base64
import threading

from fgraph.bridges import receipts
from fgraph.core.canonical import dumps_bytes, loads
from fgraph.core.checks import is_strict_int, strict_int
from fgraph.core.errors import FgraphError, TooLarge, ValueTypeError
from fgraph.core.limits import (
    CONTEXT_BUDGET,
    CONTEXT_LIMIT,
    GENESIS_TX,
    MCP_ABOUT_ATTRIBUTES,
    MCP_ABOUT_DEPTH,
    MCP_ABOUT_VALUES,
    MCP_CURSOR_CHARS,
    MCP_INCOMING_LIMIT,
    MCP_PAGE_LIMIT,
    MCP_QUERY_LIMIT,
    MCP_QUERY_MAX_LIMIT,
    MCP_RECALL_K,
    MCP_RESPONSE_BYTES,
)
from fgraph.mcp.specs import SPECS

MEMORY_TEXT, MEMORY_EMBEDDING = "memory/text", "memory/embedding"


def envelope(basis_tx: int, data) -> dict:
    """The success envelope; TooLarge when its canonical JSON exceeds ``MCP_RESPONSE_BYTES``."""
    result = {"ok": True, "basis_tx": basis_tx, "data": data}
    size = len(dumps_bytes(result))
    if size > MCP_RESPONSE_BYTES:
        raise TooLarge(f"MCP response exceeds {MCP_RESPONSE_BYTES // 1024} KiB ({size} bytes)",
                       "narrow the request or continue with a cursor")
    return result


def fit_incoming(basis_tx: int, data: dict) -> dict:
    """``about`` data whose ``incoming`` list is cut, and marked truncated, so that the envelope
    stays within the cap; an entity too large on its own is left for ``envelope`` to refuse."""
    room = MCP_RESPONSE_BYTES - len(dumps_bytes({"ok": True, "basis_tx": basis_tx,
                                           "data": dict(data, incoming=[], incoming_truncated=False)}))
    kept = []
    for item in data["incoming"]:
        room -= len(dumps_bytes(item)) + (1 if kept else 0)  # canonical JSON: items joined by ","
        if room < 0:
            return dict(data, incoming=kept, incoming_truncated=True)
        kept.append(item)
    return data


def entity_selector(raw):
    """Selectors of 03 §2 as MCP passes them: a digit string is a name, never an id."""
    if isinstance(raw, bool) or isinstance(raw, float) or (isinstance(raw, dict) and set(raw) != {"eid"}):
        raise ValueTypeError(f"invalid entity reference {raw!r}",
                             'pass a name, a positive id, a lookup ["attr", value] or {"eid": uuid}')
    return raw


def loosely(view, selector):
    """A name may differ from the entity's in case (issue 30 item 2): an agent asks for "ada
    lovelace"; the other selectors, and names matching exactly, go through as given."""
    return view.resolve(selector, loose=True) if isinstance(selector, str) else selector


def compact(entity: dict) -> dict:
    """The top level of an entity cut to its first ``MCP_ABOUT_ATTRIBUTES`` attributes by name and
    ``MCP_ABOUT_VALUES`` values each."""
    out = {}
    for name in sorted(entity)[:MCP_ABOUT_ATTRIBUTES]:
        value = entity[name]
        out[name] = value[:MCP_ABOUT_VALUES] if isinstance(value, list) else value
    return out


class Tools:
    """The tools of one server over one open ``Db``; calls are serialized (the SDK runs sync
    tools in worker threads, and one SQLite connection serves one call at a time)."""

    def __init__(self, db, *, embed=None):
        self.db, self.embed = db, embed
        self.lock = threading.Lock()

    def _pinned(self):
        """A view at the latest transaction when the call starts."""
        return self.db.at(self.db.latest_tx())

    # -- reads ----------------------------------------------------------------
    def about(self, entity, depth: int = MCP_ABOUT_DEPTH, incoming: bool = False) -> dict:
        """The compact entity, exactly the published tool's data; with ``incoming`` (ours)
        ``{"entity": compact, "incoming": [...], "incoming_truncated": bool}``."""
        SPECS["about"].check(depth=depth, incoming=incoming)
        selector = entity_selector(entity)
        with self.lock:
            view = self._pinned()
            selector = loosely(view, selector)
            if not incoming:
                return envelope(view.basis, compact(view.entity(selector, depth)))
            found = view.about(selector, depth, limit=MCP_INCOMING_LIMIT)
            return envelope(view.basis, fit_incoming(view.basis, dict(found, entity=compact(found["entity"]))))

    def why(self, entity, attribute=None, limit: int = MCP_PAGE_LIMIT) -> dict:
        return self._rows("why", entity, attribute, limit)

    def history(self, entity, attribute=None, limit: int = MCP_PAGE_LIMIT) -> dict:
        return self._rows("history", entity, attribute, limit)

    def _rows(self, kind: str, entity, attribute, limit: int) -> dict:
        SPECS[kind].check(limit=limit)
        selector = entity_selector(entity)
        with self.lock:
            view = self._pinned()
            rows = getattr(view, kind)(loosely(view, selector), attribute)
            return envelope(view.basis, {"items": rows[:limit], "truncated": len(rows) > limit})

    def receipt(self, tx: int) -> dict:
        with self.lock:
            view = self._pinned()
            return envelope(view.basis, view.receipt(tx))

    def recall(self, query: str, k: int = MCP_RECALL_K, expand: int = 0) -> dict:
        SPECS["recall"].check(k=k, expand=expand)
        if not isinstance(query, str) or not query.strip():
            raise ValueTypeError("recall needs a non-blank query", "pass the words to look for")
        options = {}
        vector = None if self.embed is None else self.embed(query)
        if vector is not None and any(vector):  # all zeroes (no known token): the words alone rank
            options = {"vector": vector, "vector_attribute": MEMORY_EMBEDDING}
        with self.lock:
            # published hits first, then entity-level ones to fill k (decision S1, docs/search.md)
            result = self.db.search(text=query, k=k, expand=expand, match="fill", **options)
            return envelope(result["basis_tx"], result.to_dict())

    def query(self, q, args=None) -> dict:
        q = _bounded_query(q)
        with self.lock:
            view = self._pinned()
            return envelope(view.basis, view.q(q, args).to_dict())

    def explain(self, q, args=None) -> dict:
        q = _bounded_query(q)
        with self.lock:
            view = self._pinned()
            plan = view.explain(q, args)
            return envelope(plan["basis_tx"], plan)

    def datoms(self, index="eavt", components=None, source="current", limit=MCP_PAGE_LIMIT, cursor=None) -> dict:
        SPECS["datoms"].check(index=index, source=source, limit=limit)
        with self.lock:
            view = self._pinned()
            page = view.datoms(index, [] if components is None else components, source=source, limit=limit,
                               cursor=cursor)
            return envelope(page["basis_tx"], page)  # a continued cursor keeps its own basis

    def schema(self, prefix=None, include_system=False, limit=MCP_PAGE_LIMIT, cursor=None) -> dict:
        """The schema page in pages of at most ``limit`` attributes and shapes together; a cursor
        binds its basis and the request's arguments."""
        SPECS["schema"].check(include_system=include_system, limit=limit)
        arguments = {"include_system": include_system, "prefix": prefix}
        with self.lock:
            basis, offset = self.db.latest_tx(), 0
            if cursor is not None:
                basis, offset = read_cursor(cursor, "schema-tool", arguments, self.db.latest_tx())
            view = self.db.at(basis)
            page = view.schema(prefix, include_system=include_system)
            items = [("attributes", a) for a in page["attributes"]] + [("shapes", s) for s in page["shapes"]]
            chosen = items[offset:offset + limit]
            more = offset + limit < len(items)
            data = {"basis_tx": view.basis, "digest": page["digest"],
                    "attributes": [item for kind, item in chosen if kind == "attributes"],
                    "shapes": [item for kind, item in chosen if kind == "shapes"],
                    "next_cursor": make_cursor("schema-tool", arguments, view.basis, offset + limit) if more else None,
                    "truncated": more}
            return envelope(view.basis, data)

    def context(self, since=None, budget: int = CONTEXT_BUDGET, limit: int = CONTEXT_LIMIT, entity=None,
                by: str = "entity", type=None) -> dict:
        SPECS["context"].check(budget=budget, limit=limit, by=by)
        with self.lock:
            view = self._pinned()
            # the last line names the tool call that gets the rest: an agent cannot run `fgraph tail`
            rendered = view.context(since, budget, limit=limit, entity=entity, by=by, type=type, more_hint="tool")
            return envelope(view.basis, rendered)

    # -- writes ---------------------------------------------------------------
    def remember(self, by: str, operation_id: str, facts=None, text=None, source=None, key=None,
                 if_basis_tx=None) -> dict:
        _check_write_guards(operation_id, if_basis_tx)
        data = _as_items(facts)
        if text is not None:
            if not text.strip():
                raise ValueTypeError("remember text is blank", "pass text with at least one visible character")
            if key == "":
                raise ValueTypeError("remember key is empty", "pass a non-empty key, or none for a new note")
            note = {} if key is None else {"id": key}
            note[MEMORY_TEXT] = text
            if self.embed is not None:
                note[MEMORY_EMBEDDING] = {"vector": self.embed(text)}
            data.append(note)
        if not data:
            raise ValueTypeError("remember needs facts or text", "pass facts (a map, an operation or a list) or text")
        options = {"by": by, "operation_id": operation_id, "if_basis_tx": if_basis_tx}
        if source is not None:
            options["source"] = source
        with self.lock:
            return _write_envelope(self.db.transact(data, **options))

    def forget(self, by: str, entity, operation_id: str, if_basis_tx: int, attribute=None, value=None) -> dict:
        _check_write_guards(operation_id, if_basis_tx)
        if value is not None and attribute is None:
            raise ValueTypeError("forget was given a value but no attribute",
                                 "name the attribute the value belongs to, or drop the value to forget the entity")
        op = ["retract", entity]
        if attribute is not None:
            op.append(attribute)
            if value is not None:
                op.append(value)
        with self.lock:
            return _write_envelope(self.db.transact(op, by=by, operation_id=operation_id, if_basis_tx=if_basis_tx))

    def excise(self, by: str, entity, operation_id: str, if_basis_tx: int, erase_name: bool = False,
               published_receipt: bool = False) -> dict:
        """``by`` is not recorded: an excision's transaction carries no provenance (spec 07 §2)."""
        _check_write_guards(operation_id, if_basis_tx)
        with self.lock:
            report = self.db.excise(entity, operation_id=operation_id, if_basis_tx=if_basis_tx, erase_name=erase_name)
            if published_receipt:
                return _write_envelope(report)
            try:
                return envelope(report["tx"], receipts.redacted(self.db, report))
            except TooLarge:   # committed: never an error (README decision 12); the list of events goes
                return envelope(report["tx"], receipts.redacted(self.db, report, events=False))

    def undo(self, by: str, tx: int, operation_id: str, if_basis_tx: int) -> dict:
        _check_write_guards(operation_id, if_basis_tx)
        with self.lock:
            return _write_envelope(self.db.undo(tx, by=by, operation_id=operation_id, if_basis_tx=if_basis_tx))


def make_cursor(resource: str, arguments: dict, basis: int, offset: int) -> str:
    """Opaque to clients: unpadded base64url of the canonical position."""
    raw = dumps_bytes({"arguments": arguments, "basis": basis, "offset": offset, "resource": resource})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor, resource: str, arguments: dict, latest: int) -> tuple[int, int]:
    what = resource.split("-")[0]
    invalid = ValueTypeError(f"{what} cursor is invalid", "pass the next_cursor of the previous page unchanged")
    if not isinstance(cursor, str) or not cursor or len(cursor) > MCP_CURSOR_CHARS:
        raise invalid
    try:
        position = loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, FgraphError):
        raise invalid from None
    if (type(position) is not dict or set(position) != {"arguments", "basis", "offset", "resource"}
            or not is_strict_int(position["basis"]) or not is_strict_int(position["offset"])
            or not GENESIS_TX <= position["basis"] <= latest or position["offset"] < 0):
        raise invalid
    if position["resource"] != resource or position["arguments"] != arguments:
        raise ValueTypeError(f"{what} cursor does not match this {what} request",
                             "restart pagination without a cursor")
    return position["basis"], position["offset"]


def _bounded_query(q):
    """MCP answers at most ``MCP_QUERY_MAX_LIMIT`` rows: an absent ``limit`` means ``MCP_QUERY_LIMIT``,
    a given one must be from 0 through the most."""
    if not isinstance(q, dict):
        raise ValueTypeError("query q must be a JSON object", 'pass {"find": [...], "where": [...]}')
    if "limit" not in q:
        return dict(q, limit=MCP_QUERY_LIMIT)
    strict_int(q["limit"], "query limit must be an integer from {low} through {high}",
               f"pass an integer from {{low}} through {{high}}, or none for {MCP_QUERY_LIMIT}", low=0,
               high=MCP_QUERY_MAX_LIMIT)
    return q


def _as_items(facts) -> list:
    if facts is None:
        return []
    if isinstance(facts, dict):
        return [facts]
    if isinstance(facts, list) and facts and isinstance(facts[0], str):
        return [facts]  # one operation, ["retract", ...]
    if isinstance(facts, list):
        return list(facts)
    return [facts]


def _check_write_guards(operation_id, if_basis_tx) -> None:
    if not isinstance(operation_id, str) or operation_id == "":
        raise ValueTypeError("operation_id must be a non-empty string", "pass a stable id so a retry is safe")
    if if_basis_tx is not None and if_basis_tx < GENESIS_TX:
        raise ValueTypeError(f"if_basis_tx {if_basis_tx} is before genesis",
                             "pass the basis_tx of your last read")


def _write_envelope(report) -> dict:
    """A committed write is never reported as an error (README decision 12): a report too large
    for the cap comes back compact, with its counts and ``truncated``."""
    data = dict(report)
    try:
        return envelope(report["tx"], data)
    except TooLarge:
        compact_report = {key: report[key] for key in ("status", "tx", "event", "basis_tx", "at")}
        compact_report.update(ids=len(report["ids"]), asserted=len(report["asserted"]),
                              retracted=len(report["retracted"]), truncated=True)
        return envelope(report["tx"], compact_report)
