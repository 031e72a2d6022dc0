"""What every import format shares to build its event/1 records: the event builder, the names
both formats meet on, the event UUID and the checks of a record's shape.

Each valid record becomes one event whose UUID is derived from the format and the record's
canonical JSON, so importing the same record again is recognised by apply's idempotency
(spec 04 §5.3) and changes nothing. Entities are named entities carrying ``memory/name``, so the
records of every format meet in one graph; a relation is a many-valued ref ``rel/<type>``, its
type folded into the attribute grammar when it is not in it already (the original is kept in the
event's ``meta``). A record that does not have its format's shape raises ``BadRecord``.
"""

from __future__ import annotations

import re
import uuid

from fgraph.core.canonical import dumps
from fgraph.core.errors import FgraphError
from fgraph.core.names import ATTRIBUTE_RE, check_name

_NAMESPACE = uuid.UUID("5b0f3c1e-5d7a-4c41-9a51-6f2a0e8b9d10")  # fixed forever: event UUIDs depend on it
_NOT_IN_ATTRIBUTE = re.compile(r"[^a-z0-9._-]+")
NAME, TYPE, OBSERVATION = "memory/name", "memory/type", "memory/observation"


class BadRecord(Exception):
    """A record that is not a record of its format; ``reason`` says why, for the health report."""

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
    """The name-based (version 5) UUID of a record of ``fmt``: the same record is the same event."""
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


def text(value, what: str) -> str:
    return _require(value, isinstance(value, str), what, "a string")


def texts(value, what: str) -> list:
    fits = isinstance(value, list) and all(isinstance(item, str) for item in value)
    return _require(value, fits, what, "an array of strings")


def json_object(value, what: str) -> dict:
    return _require(value, isinstance(value, dict), what, "a JSON object")


def relation_kind(value, what: str) -> str:
    """A relation's type: a non-empty string (folded into an attribute name by ``relation_attribute``)."""
    kind = text(value, what)
    if not kind.strip():
        raise BadRecord(f"{what} is empty")
    return kind
