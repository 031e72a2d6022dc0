"""``fgraph import jsonl-log``: offline-first decision logs, one JSON record per line.

The record becomes the entity ``decision:<id>`` with ``decision/*`` attributes; its
``entities[]`` become refs (``decision/entity``) to named entities shared with every other record
and format, its ``relations[]`` typed refs ``rel/<type>``; ``identity.user_id`` is the event's
``by``, the record's timestamp its ``at`` (so the local receipt keeps it as
``fgraph/imported-at``), and ``identity`` and ``metadata`` travel whole in ``meta``. A log only
grows, so there is nothing to mirror. ``docs/import.md`` shows the mapping.
"""

from __future__ import annotations

from fgraph.bridges.importers import records
from fgraph.bridges.importers.items import ImportContext, JsonLines
from fgraph.bridges.importers.records import BadRecord, EventBuilder
from fgraph.core.errors import FgraphError
from fgraph.core.values import format_instant, parse_instant

NAME = "jsonl-log"
_CONTENT_LISTS = (("alternatives", "decision/alternative"), ("constraints", "decision/constraint"),
                  ("tradeoffs", "decision/tradeoff"))


def jsonl_log_event(record, *, source: str, by=None, meta=None) -> dict:
    """One decision-log record as an event stamped with the record's own time."""
    record = records.json_object(record, "the line")
    record_id = record.get("id")
    if not isinstance(record_id, str) or not record_id.strip():
        raise BadRecord("id is missing or not a non-empty string")
    content = records.json_object(record.get("content"), "content")
    identity = records.json_object(record.get("identity", {}), "identity")
    metadata = records.json_object(record.get("metadata"), "metadata")
    at = _timestamp(metadata.get("timestamp"))
    builder = EventBuilder()
    decision = records.entity_name(f"decision:{record_id}", "decision id")
    builder.fact(decision, builder.attribute("decision/id", "text", unique=True), record_id, "text")
    if "type" in record:
        builder.fact(decision, builder.attribute("decision/type", "text"), records.text(record["type"], "type"),
                     "text")
    for key in ("what", "why"):
        if key in content:
            builder.fact(decision, builder.attribute(f"decision/{key}", "text"), records.text(content[key], key),
                         "text")
    for key, attr in _CONTENT_LISTS:
        for item in records.texts(content.get(key, []), key):
            builder.fact(decision, builder.attribute(attr, "text", many=True), item, "text")
    builder.fact(decision, builder.attribute("decision/at", "instant"), {"instant": format_instant(at)}, "instant")
    _metadata_facts(builder, decision, metadata)
    user = identity.get("user_id")
    if user is not None:
        builder.fact(decision, builder.attribute("decision/user", "text"), records.text(user, "identity.user_id"),
                     "text")
    for name in records.texts(record.get("entities", []), "entities"):
        builder.named(records.entity_name(name, "entity"))
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
    return builder.event(records.event_uuid(NAME, record), at, by=user if user is not None else by, source=source,
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
                         records.text(metadata[key], f"metadata.{key}"), "text")


def _relations(value) -> list:
    if not isinstance(value, list):
        raise BadRecord("relations is not an array")
    out = []
    for item in value:
        item = records.json_object(item, "a relation")
        out.append((records.entity_name(item.get("from"), "relation 'from'"),
                    records.relation_kind(item.get("type"), "relation type"),
                    records.entity_name(item.get("to"), "relation 'to'")))
    return out


class JsonlLog(JsonLines):
    """Decision logs: each record keeps its author, its file and line, and its own time."""

    name = NAME
    description = "Decision logs, one JSON record per line."
    example = "fgraph --db team.db import jsonl-log decisions.jsonl --strict"

    def event(self, record, context: ImportContext, where: int) -> dict:
        return jsonl_log_event(record, source=context.source(where), by=context.by, meta=context.meta)


IMPORTER = JsonlLog()
