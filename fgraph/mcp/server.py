"""``fgraph mcp`` (spec 10): the database served to agents over the Model Context Protocol on
stdio, built on the official SDK (``mcp.server.mcpserver.MCPServer``).

Read-only unless ``--write``: the default server opens the file with a read-only connection
(``mode=ro`` and ``query_only``) and registers no write tool, so even a handler that tried to
write would be refused by SQLite. Tool bodies live in ``fgraph.mcp.tools``; this module
names them, gives them their schemas and annotations, turns our errors into tool errors and
runs the transport. stdout carries protocol messages only; diagnostics go to stderr.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

import fgraph
from fgraph.core.limits import CONTEXT_BUDGET, CONTEXT_LIMIT, CONTEXT_MAX_BUDGET, CONTEXT_MAX_LIMIT, CONTEXT_MIN_BUDGET
from fgraph.core.sqlite_errors import as_typed
from fgraph.mcp.resources import Resources
from fgraph.mcp.tools import Tools
from fgraph.mcp.wire import vetted_stdio

TITLE = "fgraph temporal memory"
DESCRIPTION = ("A single SQLite file of auditable facts with their full history and provenance, "
               "searchable by hybrid recall.")
INSTRUCTIONS = (
    "This server is an auditable, time-aware fact store: every fact records the transaction that "
    "asserted it, and nothing is overwritten. Read the schema first to learn the attributes. Prefer "
    "bounded query and datoms pages over broad reads, and keep the basis_tx of a response to read the "
    "same state again later. Writes (remember, forget, undo) exist only when the server was started "
    "with --write; give each one a stable operation_id and an if_basis_tx so a retry is safe.")
READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
REMEMBER = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)


def _boundary(error: type[Exception]):
    """Our typed errors (and SQLite's failures of the environment) reach the agent as ``error``
    with our message; anything else is a bug and stays one (the SDK reports it)."""
    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                typed = as_typed(exc)
                if typed is None:
                    raise
                raise error(str(typed)) from None
        return call
    return wrap


_tool_errors = _boundary(ToolError)  # the SDK prefixes the tool name


def _resource_errors(fn):
    """A resource body is indented JSON; a failing read is a JSON-RPC error with our message."""
    @_boundary(ResourceError)
    @functools.wraps(fn)
    def read(*args, **kwargs):
        return json.dumps(fn(*args, **kwargs), indent=2, ensure_ascii=False)
    return read


def _by(ctx: Context) -> str:
    params = ctx.session.client_params
    name = params.client_info.name if params is not None and params.client_info is not None else ""
    return "mcp:" + name


def _within(default: int, low: int, high: int):
    """The default of an integer argument whose bounds the input schema states (issue 30 item 6).
    Only stated: the tool checks them itself, so a value outside is refused with the published
    server's words, as before."""
    return Field(default, json_schema_extra={"minimum": low, "maximum": high})


def _one_of(default: str, *choices: str):
    return Field(default, json_schema_extra={"enum": [default, *choices]})


def build(db, *, write: bool, embed=None) -> MCPServer:
    tools = Tools(db, embed=embed)
    server = MCPServer(name="fgraph", title=TITLE, description=DESCRIPTION, instructions=INSTRUCTIONS,
                       version=fgraph.__version__, log_level="WARNING")

    def register(fn, annotations, description):
        server.tool(description=description, annotations=annotations, structured_output=True)(_tool_errors(fn))

    if write:
        def remember(operation_id: str, ctx: Context, facts: Any | None = None, text: str | None = None,
                     source: str | None = None, key: str | None = None, if_basis_tx: int | None = None) -> dict[str, Any]:
            return tools.remember(_by(ctx), operation_id, facts, text, source, key, if_basis_tx)

        def forget(entity: str | int, operation_id: str, if_basis_tx: int, ctx: Context, attribute: str | None = None,
                   value: Any | None = None) -> dict[str, Any]:
            return tools.forget(_by(ctx), entity, operation_id, if_basis_tx, attribute, value)

        def undo(tx: int, operation_id: str, if_basis_tx: int, ctx: Context) -> dict[str, Any]:
            return tools.undo(_by(ctx), tx, operation_id, if_basis_tx)

        register(remember, REMEMBER, "Store facts, a searchable note, or both; a key makes later calls replace "
                                     "the same note. Example: remember(text=\"Ada prefers vim\", key=\"note-1\", "
                                     "operation_id=\"op-1\").")
        register(forget, DESTRUCTIVE, "Retract a value, an attribute or a whole entity without erasing history. "
                                      "Example: forget(entity=\"ada\", attribute=\"person/city\", "
                                      "operation_id=\"op-2\", if_basis_tx=98).")
        register(undo, DESTRUCTIVE, "Write an audited transaction that compensates an earlier one. "
                                    "Example: undo(tx=98, operation_id=\"op-3\", if_basis_tx=99).")

    def recall(query: str, k: int = _within(10, 1, 20), expand: int = _within(0, 0, 2)) -> dict[str, Any]:
        return tools.recall(query, k, expand)

    def about(entity: Any, depth: int = _within(1, 0, 2), incoming: bool = False) -> dict[str, Any]:
        return tools.about(entity, depth, incoming)

    def why(entity: Any, attribute: str | None = None, limit: int = _within(100, 1, 100)) -> dict[str, Any]:
        return tools.why(entity, attribute, limit)

    def history(entity: Any, attribute: str | None = None, limit: int = _within(100, 1, 100)) -> dict[str, Any]:
        return tools.history(entity, attribute, limit)

    def query(q: dict[str, Any], args: dict[str, Any] | None = None) -> dict[str, Any]:
        return tools.query(q, args)

    def datoms(index: str = _one_of("eavt", "avet", "vaet"), components: list[Any] | None = None,
               source: str = _one_of("current", "history"), limit: int = _within(100, 1, 100),
               cursor: str | None = None) -> dict[str, Any]:
        return tools.datoms(index, components, source, limit, cursor)

    def receipt(tx: int) -> dict[str, Any]:
        return tools.receipt(tx)

    def schema(prefix: str | None = None, include_system: bool = False, limit: int = _within(100, 1, 100),
               cursor: str | None = None) -> dict[str, Any]:
        return tools.schema(prefix, include_system, limit, cursor)

    def explain(q: dict[str, Any], args: dict[str, Any] | None = None) -> dict[str, Any]:
        return tools.explain(q, args)

    def context(since: int | str | None = None, budget: int = _within(CONTEXT_BUDGET, CONTEXT_MIN_BUDGET, CONTEXT_MAX_BUDGET),
                limit: int = _within(CONTEXT_LIMIT, 1, CONTEXT_MAX_LIMIT),
                entity: str | int | None = None, by: str = _one_of("change", "entity"),
                type: str | None = None) -> dict[str, Any]:
        return tools.context(since, budget, limit, entity, by, type)

    register(recall, READ, "Ranked retrieval of text memories (keyword, and vector with --embed-cmd). "
                           "Example: recall(query=\"editor preferences\", k=5).")
    register(about, READ, "An entity's current facts; incoming=true also lists what refers to it (first 100). "
                          "Example: about(entity=\"ada\").")
    register(why, READ, "An entity's current facts with the transactions that asserted them. "
                        "Example: why(entity=\"ada\", attribute=\"person/born\").")
    register(history, READ, "The timeline of an entity's facts, retracted ones included. "
                            "Example: history(entity=\"ada\").")
    register(query, READ, "A JSON Datalog query at one basis (limit 100 unless given, at most 1000). "
                          "Example: query(q={\"find\": [\"?n\"], \"where\": [[\"?e\", \"person/name\", \"?n\"]]}).")
    register(datoms, READ, "One page of datoms by index prefix; pass next_cursor for the next page. "
                           "Example: datoms(index=\"avet\", components=[\"person/name\"], limit=50).")
    register(receipt, READ, "The receipt of one transaction: who, when, why, and its custom facts. "
                            "Example: receipt(tx=75).")
    register(schema, READ, "Schema discovery: attributes with declared, effective and observed types, and "
                           "shapes, in pages. Example: schema(prefix=\"person/\").")
    register(explain, READ, "The access plan a query would follow, without evaluating it. "
                            "Example: explain(q={\"find\": [\"?e\"], \"where\": [[\"?e\", \"person/name\", \"Ada\"]]}).")
    register(context, READ, "The most recent changes rendered for a prompt, newest first, grouped per transaction "
                            "with who, where and when, within `limit` items and `budget` characters; `entity` "
                            "narrows it to one entity. by=\"entity\": one line per changed entity instead, newest "
                            "source time first, with its [Type], main text, rationale and tags; `type` keeps one "
                            "type. Example: context(by=\"entity\", type=\"decision\", since=\"24h\").")
    _register_resources(server, Resources(db, tools.lock))
    return server


def _register_resources(server: MCPServer, resources: Resources) -> None:
    """The five templates of spec 10 §6, in the published order."""
    def template(uri: str, name: str, description: str):
        return server.resource(uri, name=name, description=description, mime_type="application/json")

    @template("fgraph://schema{?prefix,cursor}", "fgraph schema", "The schema page: attributes and shapes, in pages.")
    @_resource_errors
    def schema(prefix: str | None = None, cursor: str | None = None):
        return resources.schema(prefix, cursor)

    @template("fgraph://entity/{selector}{?at,cursor}", "fgraph entity",
              "An entity's live facts in EAVT order, 100 per page, optionally at a past basis.")
    @_resource_errors
    def entity(selector: str, at: str | None = None, cursor: str | None = None):
        return resources.entity(selector, at, cursor)

    @template("fgraph://tx/{selector}", "fgraph transaction", "The receipt of one transaction (first 100 custom facts).")
    @_resource_errors
    def tx(selector: str):
        return resources.tx(selector)

    @template("fgraph://event/{event}{?basis,offset,digest}", "fgraph event",
              "One stored event in base64 chunks of 128 KiB, pinned to a basis and a digest.")
    @_resource_errors
    def event(event: str, basis: str | None = None, offset: str | None = None, digest: str | None = None):
        return resources.event(event, basis, offset, digest)

    @template("fgraph://changes{?since,cursor}", "fgraph changes",
              "Committed events after since, in pages of at most 100 events and 192 KiB.")
    @_resource_errors
    def changes(since: str | None = None, cursor: str | None = None):
        return resources.changes(since, cursor)

    @template("fgraph://context{?since,budget,limit,by,type}", "fgraph context",
              "The most recent changes (by=entity: changed entities) rendered for a prompt within a character "
              "budget (this runtime's).")
    @_resource_errors
    def context(since: str | None = None, budget: str | None = None, limit: str | None = None,
                by: str | None = None, type: str | None = None):
        return resources.context(since, budget, limit, by, type)


def serve(db, *, write: bool, embed=None) -> None:
    """Serve ``db`` on stdin/stdout until stdin ends."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = build(db, write=write, embed=embed)
    lowlevel = server._lowlevel_server
    options = lowlevel.create_initialization_options(experimental_capabilities={})

    async def run() -> None:
        async with vetted_stdio() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, options)

    anyio.run(run)
