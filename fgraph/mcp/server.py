"""``fgraph mcp`` (spec 10): the database served to agents over the Model Context Protocol on
stdio, built on the official SDK's public API.

Read-only unless ``--write``: the default server opens the file with a read-only connection
(``mode=ro`` and ``query_only``) and registers no write tool, so even a handler that tried to
write would be refused by SQLite. The tools are declared once, in ``fgraph.mcp.specs``, and
registered by ``fgraph.mcp.registry``; their bodies are ``fgraph.mcp.tools``. This module builds
the registry (``build``: an ``MCPServer`` with the tools and the resource templates) and serves
it on the vetted stdio wire through the protocol server (``fgraph.mcp.protocol``). stdout
carries protocol messages only; diagnostics go to stderr.
"""

from __future__ import annotations

import functools
import gc
import json
import logging
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

import fgraph
from fgraph.core.limits import MCP_CHANGES_BYTES, MCP_CHANGES_EVENTS, MCP_EVENT_CHUNK, MCP_PAGE_LIMIT, MCP_RECEIPT_FACTS
from fgraph.mcp.protocol import protocol_server
from fgraph.mcp.registry import register_tools, typed_errors
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
PROPOSE_INSTRUCTIONS = INSTRUCTIONS.replace(
    "Writes (remember, forget, undo) exist only when the server was started with --write; ",
    "Writes are PROPOSALS here: remember, forget and undo check the call as a real write would (a call the store "
    "would refuse is refused now), then queue it for a person to review; nothing reaches the store until the person "
    "accepts it. The answer's status is \"proposed\" with the proposal id; an identical repeated call returns the "
    "same id. Reads answer from the store as it is, and about, why, history and recall list in `pending` the "
    "proposals touching an entity: do not propose those changes again. ")


def _resource_errors(fn):
    """A resource body is indented JSON; a failing read is a JSON-RPC error with our message."""
    @typed_errors(ResourceError)
    @functools.wraps(fn)
    def read(*args, **kwargs):
        return json.dumps(fn(*args, **kwargs), indent=2, ensure_ascii=False)
    return read


def build(db, *, write: bool, embed=None, allow_excise: bool = False, propose: str | None = None) -> MCPServer:
    """The server's registry: the tools of ``fgraph.mcp.specs`` (the write tools only with
    ``write``, ``excise`` only with ``allow_excise`` too; with ``propose``, a proposals file, the
    write tools propose instead: ``fgraph.mcp.propose``) and the resource templates, over one open ``Db``."""
    if propose is not None:
        from fgraph.mcp.propose import ProposingTools
        tools = ProposingTools(db, propose, embed=embed)
        tools.check()
    else:
        tools = Tools(db, embed=embed)
    server = MCPServer(name="fgraph", title=TITLE, description=DESCRIPTION,
                       instructions=INSTRUCTIONS if propose is None else PROPOSE_INSTRUCTIONS,
                       version=fgraph.__version__, log_level="WARNING")
    register_tools(server, tools, write=write, allow_excise=write and allow_excise, propose=propose is not None)
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
              f"An entity's live facts in EAVT order, {MCP_PAGE_LIMIT} per page, optionally at a past basis.")
    @_resource_errors
    def entity(selector: str, at: str | None = None, cursor: str | None = None):
        return resources.entity(selector, at, cursor)

    @template("fgraph://tx/{selector}", "fgraph transaction",
              f"The receipt of one transaction (first {MCP_RECEIPT_FACTS} custom facts).")
    @_resource_errors
    def tx(selector: str):
        return resources.tx(selector)

    @template("fgraph://event/{event}{?basis,offset,digest}", "fgraph event",
              f"One stored event in base64 chunks of {MCP_EVENT_CHUNK // 1024} KiB, pinned to a basis and a digest.")
    @_resource_errors
    def event(event: str, basis: str | None = None, offset: str | None = None, digest: str | None = None):
        return resources.event(event, basis, offset, digest)

    @template("fgraph://changes{?since,cursor}", "fgraph changes",
              f"Committed events after since, in pages of at most {MCP_CHANGES_EVENTS} events and "
              f"{MCP_CHANGES_BYTES // 1024} KiB.")
    @_resource_errors
    def changes(since: str | None = None, cursor: str | None = None):
        return resources.changes(since, cursor)

    @template("fgraph://context{?since,budget,limit,by,type}", "fgraph context",
              "The most recently changed entities (by=change: the changes) rendered for a prompt within a "
              "character budget (this runtime's).")
    @_resource_errors
    def context(since: str | None = None, budget: str | None = None, limit: str | None = None,
                by: str | None = None, type: str | None = None):
        return resources.context(since, budget, limit, by, type)


def serve(db, *, write: bool, embed=None, allow_excise: bool = False, propose: str | None = None) -> None:
    """Serve ``db`` on stdin/stdout until stdin ends."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = protocol_server(build(db, write=write, embed=embed, allow_excise=allow_excise, propose=propose))
    # spec 10 §2.1: the capabilities include an empty `experimental`
    options = server.create_initialization_options(experimental_capabilities={})

    async def run() -> None:
        async with vetted_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, options)

    # What start-up made (the SDK, pydantic's schemas, our modules) lives as long as the server:
    # frozen, a full collection no longer walks it, so a call that triggers one is not the slow one.
    gc.collect()
    gc.freeze()
    anyio.run(run)
