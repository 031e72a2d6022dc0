"""``fgraph import jsonl-log``: offline-first decision logs, one JSON record per line.

The record becomes the entity ``decision:<id>`` with ``decision/*`` attributes; its
``entities[]`` become refs (``decision/entity``) to named entities shared with every other record
and format, its ``relations[]`` typed refs ``rel/<type>``; ``identity.user_id`` is the event's
``by``, the record's timestamp its ``at`` (so the local receipt keeps it as
``fgraph/imported-at``), and ``identity`` and ``metadata`` travel whole in ``meta``. A log only
grows, so there is nothing to mirror. ``docs/import.md`` shows the mapping.

Real logs vary (issue 50 item 2, decision IM1 in docs/import.md): ``importance`` and
``confidence`` may be numbers or strings, ``category`` a string or an array, the timestamp an RFC
3339 time with a space for the ``T`` or epoch seconds or milliseconds. Each is stored as what it
is: a value the attribute's type cannot hold goes to a sibling attribute
(``decision/importance-score``, ``decision/confidence-label``), never into a guessed conversion.
A record logged again under the same id replaces its predecessor's many-valued facts
(``Relogs``), as its single-valued ones are replaced by the store.
"""

from __future__ import annotations

import math
import re

from fgraph.bridges.importers import records
from fgraph.bridges.importers.items import ImportContext, JsonLines
from fgraph.bridges.importers.records import BadRecord, EventBuilder
from fgraph.core.errors import FgraphError, NotFound
from fgraph.core.limits import DATOMS_MAX_LIMIT
from fgraph.core.values import format_instant, parse_instant

NAME = "jsonl-log"
_CONTENT_LISTS = (("alternatives", "decision/alternative"), ("constraints", "decision/constraint"),
                  ("tradeoffs", "decision/tradeoff"))
# the many-valued facts a re-logged record replaces (the values a record lists, not the graph around it)
REPLACED = {"decision/alternative": "text", "decision/constraint": "text", "decision/tradeoff": "text",
            "decision/category": "text", "decision/entity": "ref"}
_SPACED = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}) +([0-9]{2}:)")
_EPOCH_SECONDS_BELOW = 100_000_000_000        # 1e11 s is the year 5138; 1e11 ms is 1973
_EPOCH_MILLIS_BELOW = 100_000_000_000_000     # 1e14 ms is the year 5138
_NUMBER = re.compile(r"\s*[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*")


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
    """An RFC 3339 time (``T`` or a space between date and time), or epoch seconds or milliseconds
    (a number, or a string of digits), as UTC microseconds."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise BadRecord("metadata.timestamp is missing or not an RFC 3339 time or epoch seconds or milliseconds")
    if isinstance(value, str):
        try:
            return parse_instant(_SPACED.sub(r"\1T\2", value.strip(), count=1))
        except FgraphError:
            raise BadRecord(f"metadata.timestamp {value[:60]!r} is not an RFC 3339 time") from None
    if value != value or abs(value) >= _EPOCH_MILLIS_BELOW:
        raise BadRecord(f"metadata.timestamp {value!r} is neither epoch seconds nor epoch milliseconds")
    micros = round(value * (1_000_000 if abs(value) < _EPOCH_SECONDS_BELOW else 1_000))
    try:
        return parse_instant(micros)
    except FgraphError:
        raise BadRecord(f"metadata.timestamp {value!r} is out of the range of an instant") from None


def _metadata_facts(builder: EventBuilder, decision: str, metadata: dict) -> None:
    confidence = metadata.get("confidence")
    if confidence is not None:   # a number, a number in a string, or a label ("high")
        number = _number(confidence, "metadata.confidence")
        if number is not None:
            builder.fact(decision, builder.attribute("decision/confidence", "float"), number, "float")
        else:
            builder.fact(decision, builder.attribute("decision/confidence-label", "text"), confidence, "text")
    for key in ("project", "category", "importance"):
        value = metadata.get(key)
        if value is None:
            continue
        if key == "importance" and not isinstance(value, str):   # a score (0.7) rather than a word
            score = _number(value, "metadata.importance")
            builder.fact(decision, builder.attribute("decision/importance-score", "float"), score, "float")
        elif key == "category" and isinstance(value, list):   # several categories
            for item in records.texts(value, "metadata.category"):
                builder.fact(decision, builder.attribute("decision/category", "text", many=True), item, "text")
        else:
            builder.fact(decision, builder.attribute(f"decision/{key}", "text"),
                         records.text(value, f"metadata.{key}"), "text")


def _number(value, what: str) -> float | int | None:
    """A JSON number as it is, a string holding one as that number, None for any other string."""
    if isinstance(value, str):
        return float(value) if _NUMBER.fullmatch(value) and math.isfinite(float(value)) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRecord(f"{what} is not a number")
    return value


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

    def relogs(self, db) -> Relogs:
        """What makes a re-logged record replace its predecessor's many-valued facts in ``db``."""
        return Relogs(db)


class Relogs:
    """The many-valued facts (``REPLACED``) each decision holds, read from the store once and then
    followed through the run: a record whose decision already holds values it does not list
    retracts them in its own event, so a re-logged record replaces rather than adds to them."""

    def __init__(self, db):
        self._db = db
        self._held: dict[str, dict[str, list]] = {}
        # the attributes the store holds at the start: one a decision lacks then, it gets only in this run
        # (followed in _held), and an unknown name never reaches datoms (its NotFound looks for suggestions)
        names = {row["name"] for row in db.attributes("decision/")}
        self._stored_attrs = [attr for attr in REPLACED if attr in names] if "decision/id" in names else []

    def event(self, event: dict) -> dict:
        decision = next((item[0] for item in event["asserted"] if item[1] == "decision/id"), None)
        if decision is None:
            return event
        listed: dict[str, list] = {attr: [] for attr in REPLACED}
        for entity, attr, value, _ in event["asserted"]:
            if entity == decision and attr in REPLACED:
                listed[attr].append(value)
        held = self._held.get(decision)
        if held is None:
            held = self._stored(decision)
        self._held[decision] = listed
        retracted = [[decision, attr, value, REPLACED[attr]]
                     for attr, values in held.items() for value in values if value not in listed[attr]]
        return dict(event, retracted=retracted) if retracted else event

    def _stored(self, decision: str) -> dict[str, list]:
        held: dict[str, list] = {attr: [] for attr in REPLACED}
        record_id = decision.removeprefix("decision:")
        if not self._stored_attrs or not self._db.datoms("avet", ["decision/id", record_id], limit=1)["items"]:
            return held   # a decision the store does not hold yet
        for attr in self._stored_attrs:
            try:
                rows = self._db.datoms("eavt", [decision, attr], limit=DATOMS_MAX_LIMIT)["items"]
            except NotFound:   # retracted or excised meanwhile: nothing held
                continue
            held[attr] = [row["v"] for row in rows]
        return held


IMPORTER = JsonlLog()
