"""``fgraph mcp`` driven the way its users drive it: the official SDK's stdio client, in the
deterministic environment (spec 11 §2.3), against our executable or another one (the peer, an
installed wheel)."""

from __future__ import annotations

import os

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import Implementation

from tests.support.cli import FGRAPH
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED

OURS = FGRAPH


def server_env() -> dict:
    """This process's environment without FGRAPH_* settings (FGRAPH_PEER kept), with the conformance
    clock and seed: what an MCP server under test is started with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_") or k == "FGRAPH_PEER"}
    env.update(FGRAPH_CLOCK=str(CONFORMANCE_CLOCK), FGRAPH_EVENT_SEED=CONFORMANCE_SEED)
    return env


def session_run(executable: str, path, script, *extra: str, client: str = "probe"):
    """Run ``await script(session)`` against ``executable --db path mcp *extra``; returns its result."""
    params = StdioServerParameters(command=executable, args=["--db", str(path), "mcp", *extra], env=server_env())

    async def main():
        with open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, write):
                async with ClientSession(read, write, client_info=Implementation(name=client, version="1")) as session:
                    await session.initialize()
                    return await script(session)

    return anyio.run(main)


def call(name: str, **arguments):
    """A ``session_run`` script calling tool ``name``: (is_error, structured content, the text contents)."""
    async def script(session):
        result = await session.call_tool(name, arguments)
        return (result.is_error, result.structured_content,
                [c.text for c in result.content if getattr(c, "text", None) is not None])
    return script
