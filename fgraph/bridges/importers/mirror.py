"""``fgraph import mcp-memory --mirror``: the facts one import source holds, made equal to its file.

The MCP memory server rewrites its whole file on every change and keeps no history, so an
additive import keeps what the server has since deleted. A mirror import also retracts it, with
ordinary retractions (``history`` still shows every fact, and when it went), in the same write
as the additions (``fgraph.bridges.importers.pipeline`` runs it; ``docs/import.md`` explains the choice).

**Whose facts** (provenance, never names): a live ``memory/name``, ``memory/type``,
``memory/observation`` or ``rel/*`` fact belongs to the source when the transaction that
asserted it was written by an importer (its event UUID is name-based, version 5; local writes get
random version-4 ones) from this source (its receipt's ``source`` is ``LABEL:LINE``, LABEL being
the file as given or ``--source``). Facts written any other way, by hand or by another source,
are never retracted.

**What the file holds**: the key of each of its facts, ``(entity, attribute)`` for the
single-valued ``memory/name`` and ``memory/type``, ``(entity, attribute, value)`` for
observations and relations, kept as a 16-byte digest. A source fact whose key the file does not
hold is retracted; a file fact the store no longer holds (an earlier mirror retracted it, or
someone did by hand) is asserted again by a new event for its line (``again``).

Memory: the file's key digests, the facts to retract and one flag per transaction of the store
looked at; the store is paged, never loaded.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator

from fgraph.core.canonical import dumps
from fgraph.core.limits import DATOMS_MAX_LIMIT
from fgraph.bridges.importers.records import NAME, OBSERVATION, TYPE, event_uuid

SINGLE_VALUED = (NAME, TYPE)
CHUNK_ITEMS, CHUNK_BYTES = 1000, 1 << 20   # one retraction event stays far below the event cap
RETRACTED_KINDS = ("entities", "facts", "observations", "relations")


def fact_key(entity: str, attr: str, value) -> bytes:
    """The digest a fact is matched by: a single-valued attribute matches whatever its value."""
    parts = [entity, attr] if attr in SINGLE_VALUED else [entity, attr, value]
    return hashlib.blake2b(dumps(parts).encode("utf-8"), digest_size=16).digest()


def _facts(event: dict) -> Iterator[list]:
    """An import event's facts about entities (its attribute declarations left out)."""
    for item in event["asserted"]:
        if not item[1].startswith("fgraph/"):
            yield item


def event_keys(event: dict) -> Iterator[bytes]:
    for entity, attr, value, _ in _facts(event):
        yield fact_key(entity, attr, value)


def holds_all(db, event: dict) -> bool:
    """Whether every fact of an (already imported) event is live in ``db``."""
    return all(db.datoms("eavt", [entity, attr, value], limit=1)["items"]
               for entity, attr, value, _ in _facts(event))


def again(event: dict, basis: int) -> dict:
    """The event of a line imported before whose facts are not all live any more, under a new UUID
    (the old one is known, so it would be counted as already imported and change nothing)."""
    return dict(event, event=event_uuid("mcp-memory-again", [event["event"], basis, event["at"]]))


class _Provenance:
    """Whether a transaction was written by an importer from ``label``; one answer per transaction."""

    def __init__(self, db, label: str):
        self._db = db
        self._source = re.compile(re.escape(label) + r":[0-9]+")
        self._answers: dict[int, bool] = {}

    def ours(self, tx: int) -> bool:
        if tx not in self._answers:
            receipt = self._db.receipt(tx)
            source = receipt.get("source")
            self._answers[tx] = (isinstance(source, str) and self._source.fullmatch(source) is not None
                                 and uuid.UUID(receipt["event"]).version == 5)
        return self._answers[tx]


def _live(db, attr: str) -> Iterator[dict]:
    cursor = None
    while True:
        page = db.datoms("avet", [attr], limit=DATOMS_MAX_LIMIT, cursor=cursor)
        yield from page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return


def retractions(db, label: str, keys: set) -> tuple[list, dict]:
    """The source's live facts whose keys ``keys`` lacks, as event/1 retraction items, and their
    counts by kind: ``entities`` whose name went, ``observations``, ``relations``, and all ``facts``."""
    provenance = _Provenance(db, label)
    relations = sorted(row["name"] for row in db.attributes("rel/") if row["name"].startswith("rel/") and row["facts"])
    items, counts = [], dict.fromkeys(RETRACTED_KINDS, 0)
    for attr in (NAME, TYPE, OBSERVATION, *relations):
        ref = attr.startswith("rel/")
        for datom in _live(db, attr):
            entity, value = datom["e"], datom["v"]
            shaped = isinstance(value, dict) and isinstance(value.get("ref"), str) if ref else isinstance(value, str)
            if not isinstance(entity, str) or not shaped or fact_key(entity, attr, value) in keys:
                continue   # an entity or value with no name was never written by an importer
            if not provenance.ours(datom["tx"]):
                continue
            items.append([entity, attr, value, "ref" if ref else "text"])
            counts["facts"] += 1
            kind = "relations" if ref else {NAME: "entities", OBSERVATION: "observations"}.get(attr)
            if kind is not None:
                counts[kind] += 1
    return items, counts


def disagreeing(db, label: str, keys: set) -> dict:
    """How far the source's live facts have drifted from its file after a plain (additive) import:
    ``records`` (entities with a name, type or observation the file no longer holds, plus relations
    it no longer holds) and ``facts``, the facts ``--mirror`` would retract."""
    items, counts = retractions(db, label, keys)
    entities = {entity for entity, attr, _, _ in items if not attr.startswith("rel/")}
    return {"facts": counts["facts"], "records": len(entities) + counts["relations"]}


def retraction_events(items: list, *, at: int, label: str, basis: int, by=None, meta=None) -> Iterator[dict]:
    """``items`` as event/1 records that assert nothing, a chunk each; ``source`` is the label alone."""
    chunk, size = [], 0
    for item in items:
        chunk.append(item)
        size += len(dumps(item))
        if len(chunk) == CHUNK_ITEMS or size >= CHUNK_BYTES:
            yield _retraction_event(chunk, at, label, basis, by, meta)
            chunk, size = [], 0
    if chunk:
        yield _retraction_event(chunk, at, label, basis, by, meta)


def _retraction_event(chunk: list, at: int, label: str, basis: int, by, meta) -> dict:
    note = {"mirror": "mcp-memory"} if meta is None else {"mirror": "mcp-memory", "meta": meta}
    record = {"asserted": [], "at": at, "created": [], "fgraph": "event/1", "meta": note, "retracted": chunk,
              "source": label, "event": event_uuid("mcp-memory-mirror", [label, basis, at, chunk])}
    if by is not None:
        record["by"] = by
    return record
