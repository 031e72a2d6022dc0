"""The protocol server of ``fgraph mcp``: the SDK's public low-level ``Server``, which serves the
streams it is given, answering each method with the public methods of the ``MCPServer`` that
holds the tools and resources (``fgraph.mcp.server.build``).

Why two objects: ``MCPServer`` keeps the registry (argument validation, resource templates,
result conversion) but serves only the process's own stdio, so the vetted wire
(``fgraph.mcp.wire``) could reach it only through the SDK's private attributes. What
``MCPServer`` does between a request and its public methods is restated here, in its words: a
failed tool call is a result with ``isError``, a failed read a JSON-RPC error (``-32602`` for an
unknown resource, ``-32603`` otherwise) carrying the URI.
"""

from __future__ import annotations

import logging

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)

log = logging.getLogger(__name__)


def protocol_server(app: MCPServer) -> Server:
    """A low-level server answering tools, resources and prompts (the capabilities of spec 10
    §2.1) with ``app``'s public methods."""

    def context(ctx, params) -> Context:
        return Context(request_context=ctx, mcp_server=app, input_params=params)

    async def list_tools(ctx, params) -> ListToolsResult:
        return ListToolsResult(tools=await app.list_tools())

    async def call_tool(ctx, params):
        try:
            return await app.call_tool(params.name, params.arguments or {}, context(ctx, params))
        except MCPError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure of a call is its result (spec 10 §3.2)
            if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
                log.info("Tool %r failed: %r", params.name, str(exc))
            else:
                log.exception("Tool %r raised an unexpected exception", params.name)
            # an unexpected exception's text is the SDK's generic one: nothing of the bug reaches the agent
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    async def list_resources(ctx, params) -> ListResourcesResult:
        return ListResourcesResult(resources=await app.list_resources())

    async def list_templates(ctx, params) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=await app.list_resource_templates())

    async def read_resource(ctx, params) -> ReadResourceResult:
        try:
            contents = await app.read_resource(params.uri, context(ctx, params))
        except ResourceError as exc:
            if not isinstance(exc, ResourceNotFoundError):
                log.info("Resource %r failed: %r", str(params.uri), str(exc))
            code = INVALID_PARAMS if isinstance(exc, ResourceNotFoundError) else INTERNAL_ERROR
            raise MCPError(code=code, message=str(exc), data={"uri": str(params.uri)}) from None
        # every fgraph resource is a JSON text (fgraph.mcp.server)
        return ReadResourceResult(contents=[TextResourceContents(uri=params.uri, text=item.content,
                                                                 mime_type=item.mime_type or "text/plain")
                                            for item in contents])

    async def list_prompts(ctx, params) -> ListPromptsResult:
        return ListPromptsResult(prompts=await app.list_prompts())

    async def get_prompt(ctx, params):
        return await app.get_prompt(params.name, params.arguments, context(ctx, params))

    return Server(app.name, version=app.version, title=app.title, description=app.description,
                  instructions=app.instructions, on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt)
