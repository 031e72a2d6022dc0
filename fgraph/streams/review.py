"""``fgraph review``: what applying an event/1 stream would do to a receiver, without writing
(issue 35, decisions R1 and R4 in docs/streams.md).

The review is the dry-run apply (``Db.apply_summary(dry_run=True)``) watched from outside: a
``Review`` is the line source the dry run reads (it numbers and hashes every line as it hands it
over, so the digest comes from the same pass) and the ``on_report`` callback it calls after each
event. From the event and its report it learns, per entity, the facts the stream asserts and
retracts (with who, when and where from), the receiver's cardinality-one values they replace,
and the names that unify with an entity the receiver already has; an event the dry run answers
with no report is one apply would refuse with ``Conflict`` (a unique value another entity holds,
a reused event UUID), and any other error stops the dry run at its line: the rest is then
checked line by line as apply would parse it, so every refusal is listed.

Memory is bounded whatever the stream's size: ``ENTITY_CAP`` entities are detailed, each with
``DETAIL_CAP`` events of ``FACT_CAP`` facts, every list is capped at ``LIST_CAP`` and each says
how many it left out; the names this stream created, which a later event may list again
without unifying with the receiver, are remembered up to ``NAME_MEMORY``.
"""

from __future__ import annotations

import orjson

from fgraph.core.canonical import loads
from fgraph.core.errors import FgraphError
from fgraph.core.limits import MAX_EVENT_BYTES
from fgraph.streams.apply import ConflictAhead, parse_line
from fgraph.streams.digest import formatted, hasher
from fgraph.streams.render import show_name, show_selector, show_time, show_value

ENTITY_CAP = 100
DETAIL_CAP = 20
FACT_CAP = 50
LIST_CAP = 100
NAME_MEMORY = 100_000
LINE_CAP = MAX_EVENT_BYTES + 2   # as apply reads a line: an event, its CR and LF


def parsed(line: bytes) -> dict:
    """A line the dry run has already parsed and validated: orjson alone suffices (the canonical
    reader's checks were made), with the canonical reader for what orjson cannot read (big ints)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return loads(line.decode("utf-8"))


def entity_key(sel) -> str:
    """A name as it is; an eid as ``eid:<uuid>`` (the Markdown quotes a name that needs it)."""
    return sel if type(sel) is str else show_selector(sel)


def show_wire(value) -> str:
    """A receiver value in the JSON wire form of a report, rendered as ``show_value`` renders tags."""
    if isinstance(value, bool):
        return show_value(value, "bool")
    if isinstance(value, int):
        return show_value(value, "int")
    if isinstance(value, float):
        return show_value(value, "float")
    if isinstance(value, str):
        return show_value(value, "text")
    if isinstance(value, dict) and len(value) == 1:
        tag = next(iter(value))
        if tag == "ref" and isinstance(value[tag], int):
            return f"-> #{value[tag]}"
        return show_value(value, tag)
    return show_value(value, None)


class Capped:
    """A list that keeps its first ``cap`` items and counts the rest."""

    def __init__(self, cap: int):
        self.cap, self.items, self.left_out = cap, [], 0

    def full(self) -> bool:
        return len(self.items) >= self.cap

    def add(self, item) -> bool:
        if len(self.items) < self.cap:
            self.items.append(item)
            return True
        self.left_out += 1
        return False

    def as_dict(self, key: str) -> dict:
        return {key: self.items, "left_out": self.left_out}


class Entity:
    """What the stream does to one entity: its events (capped) and whether it unifies."""

    def __init__(self, key: str):
        self.key = key
        self.events = Capped(DETAIL_CAP)
        self.unifies: int | None = None   # the line whose event names an entity the receiver has
        self.facts = 0
        self.replaced = 0

    def as_dict(self) -> dict:
        return {"entity": self.key, "events": self.events.items, "events_left_out": self.events.left_out,
                "facts": self.facts, "replaces": self.replaced, "unifies_at_line": self.unifies}


class Review:
    """The line source and report callback of one dry run; ``result()`` is the review."""

    def __init__(self, handle, stream: str = "stream"):
        self._handle = handle
        self.stream = stream
        self._hash = hasher()
        self.number = 0
        self._current: bytes | None = None
        self._reported = False
        self._first_tx: int | None = None
        self._names: set[str] = set()
        self.entities: dict[str, Entity] = {}
        self.counts = {"already_applied": 0, "asserted": 0, "conflicting": 0, "events": 0, "new": 0, "noop": 0,
                       "refused": 0, "replaced": 0, "retracted": 0, "unified": 0, "facts_not_detailed": 0}
        self.refused = Capped(LIST_CAP)
        self.collisions = Capped(LIST_CAP)
        self.already = Capped(LIST_CAP)
        self.unified = Capped(LIST_CAP)
        self.dry_run_stopped_at: int | None = None
        self.basis_tx: int | None = None

    # -- the line source apply reads ---------------------------------------------------------
    @property
    def name(self):
        return getattr(self._handle, "name", None)

    def readline(self, limit: int = -1) -> bytes:
        self._settle()
        line = self._handle.readline(limit)
        if line:
            self.number += 1
            self._hash.update(line)
            self._current, self._reported = line, False
        return line

    def _settle(self) -> None:
        """The line handed over last got no report: the dry run met a Conflict there."""
        line, self._current = self._current, None
        if line is None or self._reported or not line.strip(b" \t\r\n"):
            return
        self.counts["events"] += 1
        self.counts["conflicting"] += 1
        record = parsed(line)
        touched = sorted({entity_key(item[0]) for item in record["asserted"]})[:5]
        self.refused.add({"line": self.number, "event": record["event"], "error": "Conflict",
                          "entities": touched, "message": None})
        self.counts["refused"] += 1

    def digest(self) -> str:
        return formatted(self._hash)

    # -- the reports of the dry run ----------------------------------------------------------
    def on_report(self, report: dict) -> None:
        self._reported = True
        self.counts["events"] += 1
        status = report["status"]
        if status == "already_applied":
            self.counts["already_applied"] += 1
            self.already.add({"event": report["event"], "line": self.number, "tx": report["tx"]})
            return
        if status != "applied":
            self.counts["noop"] += 1
            return
        self.counts["new"] += 1
        if self._first_tx is None:
            self._first_tx = report["tx"]
        self._note(parsed(self._current), report)

    def _note(self, record: dict, report: dict) -> None:
        """Count every fact; describe (show values) only those of an entity detailed with room left."""
        line = self.number
        replaced = self._replacements(record, report)
        grouped: dict[str, list] = {}
        full, entities = len(self.entities) >= ENTITY_CAP, self.entities
        for verb, key in (("retract", "retracted"), ("assert", "asserted")):
            self.counts[key] += len(record[key])
            for item in record[key]:
                entity = entity_key(item[0])
                if full and entity not in entities and not replaced:
                    self.counts["facts_not_detailed"] += 1   # the common case of a long stream: counted only
                else:
                    grouped.setdefault(entity, []).append((verb, item))
        for key, _ in replaced:
            grouped.setdefault(key, [])
        self._unifications(record, report, line)
        head = None
        for key, items in grouped.items():
            entity = self._entity(key)
            mine = {a: old for (k, a), old in replaced.items() if k == key} if replaced else {}
            if entity is None or entity.events.full():   # counted, not described
                asserted = {item[1] for verb, item in items if verb == "assert"}
                count = len(items) + sum(1 for a in mine if a not in asserted)
                if entity is None:
                    self.counts["facts_not_detailed"] += count
                else:
                    entity.facts += count
                    entity.replaced += sum(len(old) for old in mine.values())
                    entity.events.add(None)
                continue
            facts = []
            for verb, (_, attribute, value, tag) in items:
                fact = {"op": verb, "attribute": attribute, "value": show_value(value, tag), "tag": tag}
                old = mine.pop(attribute, None) if verb == "assert" else None
                if old:
                    fact["replaces"] = old
                facts.append(fact)
            facts += [{"op": "replace", "attribute": a, "replaces": old} for a, old in mine.items()]
            entity.facts += len(facts)
            entity.replaced += sum(len(f.get("replaces", ())) for f in facts)
            if head is None:
                head = {"line": line, "event": record["event"], "at": show_time(record["at"]),
                        "by": record.get("by"), "source": record.get("source")}
                if record.get("tx_facts"):
                    head["tx_facts"] = [f"{show_name(a)} = {show_value(v, t)}" for a, v, t in record["tx_facts"]]
            entity.events.add({**head, "facts": facts[:FACT_CAP], "facts_left_out": max(0, len(facts) - FACT_CAP)})

    def _entity(self, key: str) -> Entity | None:
        entity = self.entities.get(key)
        if entity is None and len(self.entities) < ENTITY_CAP:
            entity = self.entities[key] = Entity(key)
        return entity

    def _replacements(self, record: dict, report: dict) -> dict:
        """(entity, attribute) -> the receiver's values this event supersedes without retracting them."""
        first = self._first_tx
        # not a value an earlier event of this stream asserted
        receiver = [fact for fact in report["retracted"] if first is None or fact["tx"] < first]
        if not receiver:
            return {}
        explicit = {(entity_key(e), a) for e, a, _, _ in record["retracted"]}
        by_id = {i: "eid:" + k.split(":", 1)[1] for k, i in report["ids"].items() if k.startswith("event:")}
        found: dict = {}
        for fact in receiver:
            e = fact["e"]
            key = e if isinstance(e, str) else by_id.get(e, f"#{e}")
            if (key, fact["a"]) in explicit:
                continue
            found.setdefault((key, fact["a"]), []).append({"value": show_wire(fact["v"]), "tx": fact["tx"]})
            self.counts["replaced"] += 1
        return found

    def _unifications(self, record: dict, report: dict, line: int) -> None:
        ids = report["ids"]
        for sel in record["created"]:
            if type(sel) is str and sel in ids and len(self._names) < NAME_MEMORY:
                self._names.add(sel)
        candidates = [sel for sel in record["created"]
                      if type(sel) is str and sel not in ids and sel not in self._names]
        if not candidates:
            return
        # attributes (used, or declared here with fgraph/ facts) unify by design and never show in ``ids``
        attributes = {item[1] for key in ("asserted", "retracted") for item in record[key]}
        attributes.update(item[0] for item in record.get("tx_facts", ()))
        attributes.update(item[0] for item in record["asserted"]
                          if isinstance(item[0], str) and item[1].startswith("fgraph/"))
        for sel in candidates:
            if sel in attributes:
                continue
            self.counts["unified"] += 1
            self.unified.add({"entity": sel, "line": line, "event": record["event"]})
            entity = self._entity(sel)
            if entity is not None and entity.unifies is None:
                entity.unifies = line

    # -- the end ------------------------------------------------------------------------------
    def refuse(self, exc: FgraphError) -> None:
        """The dry run stopped on ``exc``: list it, then check the rest as apply would parse it."""
        line = exc.line or self.number
        self.dry_run_stopped_at = line
        self.counts["events"] += exc.line is not None
        self._add_refusal(line, exc)
        current, self._current = self._current, None
        self._skip_rest_of_line(current or b"\n")
        while True:
            raw = self.readline(LINE_CAP)
            if not raw:
                break
            self._current = None
            if not raw.strip(b" \t\r\n"):
                continue
            self.counts["events"] += 1
            try:
                parse_line(self.number, raw.rstrip(b"\n"), self._handle)
            except FgraphError as error:
                self._add_refusal(self.number, error.at_line(self.number))
            self._skip_rest_of_line(raw)

    def _skip_rest_of_line(self, last: bytes) -> None:
        """After an over-long line was refused, its remaining bytes (hashed, not numbered)."""
        if len(last) < LINE_CAP or last.endswith(b"\n"):
            return
        while True:
            chunk = self._handle.readline(1 << 20)
            self._hash.update(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return

    def _add_refusal(self, line: int, exc: FgraphError) -> None:
        self.counts["refused"] += 1
        self.refused.add({"line": line, "error": exc.name, "message": str(exc)})

    def finish(self, summary: dict | None, basis_tx: int | None) -> None:
        """Join the dry run's conflict messages (its first ``LIST_CAP``) to the lines refused."""
        self._settle()
        self.basis_tx = basis_tx
        messages = {c["line"]: c["message"] for c in (summary or {}).get("conflicts", ())}
        for item in self.refused.items:
            if item["message"] is None:
                item["message"] = messages.get(item["line"], "the event conflicts with the receiver (the dry run "
                                               "stopped before it could say how: fix the later refused line, then "
                                               "review again)")
            if item["error"] == "Conflict" and "unique value" in (item["message"] or ""):
                self.collisions.add(item)

    def result(self) -> dict:
        refused = self.counts["refused"] > 0
        return {"stream": self.stream, "digest": self.digest(), "lines": self.number, "basis_tx": self.basis_tx,
                "would_apply": not refused, "counts": dict(self.counts),
                "dry_run_stopped_at_line": self.dry_run_stopped_at,
                "entities": [e.as_dict() for e in self.entities.values()],
                "entities_detailed_cap": ENTITY_CAP,
                "refused": self.refused.as_dict("items"), "unique_collisions": self.collisions.as_dict("items"),
                "already_applied": self.already.as_dict("items"), "unified": self.unified.as_dict("items")}


def _position(handle) -> int | None:
    """Where a seekable handle stands (None for a pipe: it is read once, with savepoints)."""
    try:
        return handle.tell() if handle.seekable() else None
    except (AttributeError, OSError, ValueError):
        return None


def review(db, handle, stream: str = "stream") -> dict:
    """Review the event/1 stream ``handle`` (binary) against ``db`` by a dry-run apply; nothing is written."""
    start = _position(handle)
    watcher = Review(handle, stream)
    basis = db.latest_tx()
    summary = None
    try:
        try:
            # A file can be read twice: first as fast as a real apply; at a conflict, again with a
            # savepoint per event so that every conflict is listed (decision R1).
            summary = db.apply_summary(watcher, dry_run=True, on_report=watcher.on_report, optimistic=start is not None)
        except ConflictAhead:
            handle.seek(start)
            watcher = Review(handle, stream)
            summary = db.apply_summary(watcher, dry_run=True, on_report=watcher.on_report)
        basis = summary.get("basis_tx", basis)
    except FgraphError as exc:
        watcher.refuse(exc)
    watcher.finish(summary, basis)
    return watcher.result()
