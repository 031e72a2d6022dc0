"""``fgraph import mcp-memory``: the official MCP memory server's ``memory.jsonl``.

An entity line names an entity (``memory/name``) with its ``memory/type`` and many
``memory/observation`` texts; a relation line asserts a many-valued ref ``rel/<relation type>``
from one named entity to the other. The file holds no time, so every event carries the import's.
The server rewrites its file on every change, so this format supports ``--mirror``
(``fgraph.bridges.importers.mirror``). ``docs/import.md`` shows the mapping with examples.
"""

from __future__ import annotations

from fgraph.bridges.importers import records
from fgraph.bridges.importers.items import ImportContext, JsonLines
from fgraph.bridges.importers.records import OBSERVATION, TYPE, BadRecord, EventBuilder

NAME = "mcp-memory"


def mcp_memory_event(record, *, at: int, source: str, by=None, meta=None) -> dict:
    """One line of the MCP memory server's file (an entity or a relation) as an event."""
    record = records.json_object(record, "the line")
    builder = EventBuilder()
    kind = record.get("type")
    if kind == "entity":
        name = builder.named(records.entity_name(record.get("name"), "entity name"))
        builder.fact(name, builder.attribute(TYPE, "text"), records.text(record.get("entityType"), "entityType"),
                     "text")
        for observation in records.texts(record.get("observations", []), "observations"):
            builder.fact(name, builder.attribute(OBSERVATION, "text", many=True), observation, "text")
        note = None
    elif kind == "relation":
        note = builder.relation(records.entity_name(record.get("from"), "relation 'from'"),
                                records.relation_kind(record.get("relationType"), "relationType"),
                                records.entity_name(record.get("to"), "relation 'to'"))
    else:
        raise BadRecord(f"type {kind!r} is neither 'entity' nor 'relation'")
    if note is not None:
        meta = dict(note) if meta is None else {"import": note, "meta": meta}
    return builder.event(records.event_uuid(NAME, record), at, by=by, source=source, meta=meta)


class McpMemory(JsonLines):
    """The MCP memory server's knowledge graph file, one entity or relation per line."""

    name = NAME
    description = "The MCP memory server's memory.jsonl."
    example = "fgraph --db team.db import mcp-memory memory.jsonl --by alice"
    options = frozenset({"mirror"})

    def event(self, record, context: ImportContext, where: int) -> dict:
        return mcp_memory_event(record, at=context.at, source=context.source(where), by=context.by,
                                meta=context.meta)


IMPORTER = McpMemory()
