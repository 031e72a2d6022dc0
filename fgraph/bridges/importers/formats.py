"""Other tools' memory files, one record at a time, as event/1 records (``fgraph import``).

Each valid record becomes one event whose UUID is derived from the format and the record's
canonical JSON, so importing the same record again is recognised by apply's idempotency
(spec 04 §5.3) and changes nothing. ``docs/import.md`` shows the mapping with examples:

- **mcp-memory** (the official MCP memory server's ``memory.jsonl``): an entity line names an
  entity (``memory/name``) with its ``memory/type`` and many ``memory/observation`` texts; a
  relation line asserts a many-valued ref ``rel/<relation type>`` from one named entity to the
  other. A relation type that is not a valid attribute name is folded (lower case, other
  characters to ``-``) and the original kept in the event's ``meta``.
- **jsonl-log** (offline-first decision logs): the record becomes the entity
  ``decision:<id>`` with ``decision/*`` attributes; its ``entities[]`` become refs
  (``decision/entity``) to named entities shared with every other record and format, its
  ``relations[]`` typed refs as above; ``identity.user_id`` is the event's ``by``, the record's
  timestamp its ``at`` (so the local receipt keeps it as ``fgraph/imported-at``), and
  ``identity`` and ``metadata`` travel whole in ``meta``.

A record that does not have its format's shape raises ``BadRecord`` with the reason.
"""

from __future__ import annotations

import re
import uuid

from fgraph.core.canonical import dumps
from fgraph.core.errors import FgraphError
from fgraph.core.names import ATTRIBUTE_RE, check_name
from fgraph.core.values import format_instant, parse_instant

FORMATS = ("mcp-memory", "jsonl-log")
_NAMESPACE = uuid.UUID("5b0f3c1e-5d7a-4c41-9a51-6f2a0e8b9d10")  # fixed forever: event UUIDs depend on it
_NOT_IN_ATTRIBUTE = re.compile(r"[^a-z0-9._-]+")
NAME, TYPE, OBSERVATION = "memory/name", "memory/type", "memory/observation"


class BadRecord(Exception):
    """A line that is not a record of its format; ``reason`` says why, for the health report."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class EventBuilder:
    """One event/1 record: declarations first, then facts; ``created`` lists every name used, in
    order of first use (names the receiver already has simply unify)."""

    def __init__(self):
        self.asserted: list = []
        self.created: list = []
        self._seen: set = set()
        self._declared: set = set()

    def _use(self, name: str) -> str:
        if name not in self._seen:
            self._seen.add(name)
            self.created.append(name)
        return name

    def attribute(self, attr: str, kind: str, *, many: bool = False, unique: bool = False) -> str:
        if attr not in self._declared:
            self._declared.add(attr)
            self.asserted.append([self._use(attr), "fgraph/type", kind, "text"])
            if many:
                self.asserted.append([attr, "fgraph/many", True, "bool"])
            if unique:
                self.asserted.append([attr, "fgraph/unique", True, "bool"])
        return attr

    def fact(self, entity: str, attr: str, value, tag: str) -> None:
        if tag == "ref":
            self._use(value)
            value = {"ref": value}
        self.asserted.append([self._use(entity), attr, value, tag])

    def named(self, name: str) -> str:
        """A named entity that also carries its name as ``memory/name`` (queryable, shared across formats)."""
        self.fact(name, self.attribute(NAME, "text", unique=True), name, "text")
        return name

    def relation(self, source: str, kind: str, target: str) -> dict | None:
        """``source --kind--> target`` as a many-valued ref; returns the meta note of a folded kind."""
        attr = relation_attribute(kind)
        self.named(source)
        self.named(target)
        self.fact(source, self.attribute(attr, "ref", many=True), target, "ref")
        return None if attr == f"rel/{kind}" else {"attribute": attr, "relation_type": kind}

    def event(self, event_id: str, at: int, *, by=None, source=None, meta=None) -> dict:
        record = {"asserted": self.asserted, "at": at, "created": self.created, "event": event_id,
                  "fgraph": "event/1", "retracted": []}
        for key, value in (("by", by), ("source", source), ("meta", meta)):
            if value is not None:
                record[key] = value
        return record


def relation_attribute(kind: str) -> str:
    """``rel/<kind>``, folded into the attribute grammar when ``kind`` is not already in it."""
    folded = _NOT_IN_ATTRIBUTE.sub("-", kind.lower()).strip("-._") or "related"
    return f"rel/{folded[:200]}"


def event_uuid(fmt: str, record) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{fmt}\n{dumps(record)}"))


def entity_name(value, what: str) -> str:
    """A record's entity name as an fgraph name; attribute-like and reserved names are refused."""
    if not isinstance(value, str) or not value.strip():
        raise BadRecord(f"{what} is not a non-empty string")
    try:
        check_name(value, what)
    except FgraphError as exc:
        raise BadRecord(exc.message) from None
    if ATTRIBUTE_RE.match(value) or value.startswith("fgraph/"):
        raise BadRecord(f"{what} {value!r} looks like an attribute name, which fgraph keeps for attributes")
    return value


def _require(value, fits: bool, what: str, shape: str):
    if not fits:
        raise BadRecord(f"{what} is not {shape}")
    return value


def _text(value, what: str) -> str:
    return _require(value, isinstance(value, str), what, "a string")


def _texts(value, what: str) -> list:
    fits = isinstance(value, list) and all(isinstance(item, str) for item in value)
    return _require(value, fits, what, "an array of strings")


def _object(value, what: str) -> dict:
    return _require(value, isinstance(value, dict), what, "a JSON object")


# ----------------------------------------------------------------- mcp-memory

def mcp_memory_event(record, *, at: int, source: str, by=None, meta=None) -> dict:
    """One line of the MCP memory server's file (an entity or a relation) as an event."""
    record = _object(record, "the line")
    builder = EventBuilder()
    kind = record.get("type")
    if kind == "entity":
        name = builder.named(entity_name(record.get("name"), "entity name"))
        builder.fact(name, builder.attribute(TYPE, "text"), _text(record.get("entityType"), "entityType"), "text")
        for observation in _texts(record.get("observations", []), "observations"):
            builder.fact(name, builder.attribute(OBSERVATION, "text", many=True), observation, "text")
        note = None
    elif kind == "relation":
        note = builder.relation(entity_name(record.get("from"), "relation 'from'"),
                                _relation_kind(record.get("relationType"), "relationType"),
                                entity_name(record.get("to"), "relation 'to'"))
    else:
        raise BadRecord(f"type {kind!r} is neither 'entity' nor 'relation'")
    if note is not None:
        meta = dict(note) if meta is None else {"import": note, "meta": meta}
    return builder.event(event_uuid("mcp-memory", record), at, by=by, source=source, meta=meta)


def _relation_kind(value, what: str) -> str:
    kind = _text(value, what)
    if not kind.strip():
        raise BadRecord(f"{what} is empty")
    return kind


# ----------------------------------------------------------------- jsonl-log

_CONTENT_LISTS = (("alternatives", "decision/alternative"), ("constraints", "decision/constraint"),
                  ("tradeoffs", "decision/tradeoff"))


def jsonl_log_event(record, *, source: str, by=None, meta=None) -> dict:
    """One decision-log record as an event stamped with the record's own time."""
    record = _object(record, "the line")
    record_id = record.get("id")
    if not isinstance(record_id, str) or not record_id.strip():
        raise BadRecord("id is missing or not a non-empty string")
    content = _object(record.get("content"), "content")
    identity = _object(record.get("identity", {}), "identity")
    metadata = _object(record.get("metadata"), "metadata")
    at = _timestamp(metadata.get("timestamp"))
    builder = EventBuilder()
    decision = entity_name(f"decision:{record_id}", "decision id")
    builder.fact(decision, builder.attribute("decision/id", "text", unique=True), record_id, "text")
    if "type" in record:
        builder.fact(decision, builder.attribute("decision/type", "text"), _text(record["type"], "type"), "text")
    for key in ("what", "why"):
        if key in content:
            builder.fact(decision, builder.attribute(f"decision/{key}", "text"), _text(content[key], key), "text")
    for key, attr in _CONTENT_LISTS:
        for item in _texts(content.get(key, []), key):
            builder.fact(decision, builder.attribute(attr, "text", many=True), item, "text")
    builder.fact(decision, builder.attribute("decision/at", "instant"), {"instant": format_instant(at)}, "instant")
    _metadata_facts(builder, decision, metadata)
    user = identity.get("user_id")
    if user is not None:
        builder.fact(decision, builder.attribute("decision/user", "text"), _text(user, "identity.user_id"), "text")
    for name in _texts(record.get("entities", []), "entities"):
        builder.named(entity_name(name, "entity"))
        builder.fact(decision, builder.attribute("decision/entity", "ref", many=True), name, "ref")
    folded = []
    for relation in _relations(record.get("relations", [])):
        note = builder.relation(*relation)
        if note is not None:
            folded.append(note)
    carried = {"identity": identity, "metadata": metadata}
    if folded:
        carried["folded_relations"] = folded
    if meta is not None:
        carried["meta"] = meta
    return builder.event(event_uuid("jsonl-log", record), at, by=user if user is not None else by, source=source,
                         meta=carried)


def _timestamp(value) -> int:
    if not isinstance(value, str):
        raise BadRecord("metadata.timestamp is missing or not an RFC 3339 string")
    try:
        return parse_instant(value)
    except FgraphError:
        raise BadRecord(f"metadata.timestamp {value[:60]!r} is not an RFC 3339 time") from None


def _metadata_facts(builder: EventBuilder, decision: str, metadata: dict) -> None:
    confidence = metadata.get("confidence")
    if confidence is not None:
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
            raise BadRecord("metadata.confidence is not a number")
        builder.fact(decision, builder.attribute("decision/confidence", "float"), confidence, "float")
    for key in ("project", "category", "importance"):
        if metadata.get(key) is not None:
            builder.fact(decision, builder.attribute(f"decision/{key}", "text"),
                         _text(metadata[key], f"metadata.{key}"), "text")


def _relations(value) -> list:
    if not isinstance(value, list):
        raise BadRecord("relations is not an array")
    out = []
    for item in value:
        item = _object(item, "a relation")
        out.append((entity_name(item.get("from"), "relation 'from'"), _relation_kind(item.get("type"), "relation type"),
                    entity_name(item.get("to"), "relation 'to'")))
    return out
