"""The protocol server (fgraph/mcp/protocol.py) in memory, through the SDK's own client: the
capabilities of spec 10 §2.1, and what it restates of MCPServer between a request and its public
methods: a failing call is a result with isError, a failing read a JSON-RPC error with the URI,
an unknown prompt error code 0, a write's ``by`` the client's name."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams
from mcp.types import Implementation

import fgraph
from fgraph.mcp.protocol import protocol_server
from fgraph.mcp.server import build
from tests.support.constants import CONFORMANCE_CLOCK


ADA_TX = 67   # genesis 64, then ada's transaction creates ada (65) and person/name (66)


def served(script, *, write: bool = False):
    """``await script(session, initialize_result)`` against the protocol server of a small store."""
    async def main():
        with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as db:
            assert db.transact({"id": "ada", "person/name": "Ada Lovelace"})["tx"] == ADA_TX
            server = protocol_server(build(db, write=write))
            options = server.create_initialization_options(experimental_capabilities={})
            async with create_client_server_memory_streams() as (client, streams):
                async with anyio.create_task_group() as group:
                    group.start_soon(server.run, *streams, options)
                    async with ClientSession(*client, client_info=Implementation(name="probe", version="1")) as session:
                        result = await script(session, await session.initialize())
                    group.cancel_scope.cancel()
            return result
    return anyio.run(main)


def test_initialize_states_the_capabilities_of_spec_10():
    async def script(session, initialized):
        return initialized.capabilities.model_dump(by_alias=True, exclude_none=True), initialized.server_info
    capabilities, info = served(script)
    assert capabilities == {"experimental": {}, "prompts": {"listChanged": False},
                            "resources": {"subscribe": False, "listChanged": False}, "tools": {"listChanged": False}}
    assert (info.name, info.title, info.version) == ("fgraph", "fgraph temporal memory", fgraph.__version__)


def test_a_call_answers_the_envelope_and_a_failure_is_a_result_with_is_error():
    async def script(session, _):
        calls = [("about", {"entity": "ada"}), ("about", {"entity": "nobody"}), ("about", {"entity": "ada", "depth": 3}),
                 ("receipt", {"tx": "x"}), ("remember", {"text": "x", "operation_id": "o"})]
        return [await session.call_tool(name, arguments) for name, arguments in calls]
    found, missing, bounded, invalid, unknown = served(script)
    assert not found.is_error and found.structured_content == {
        "ok": True, "basis_tx": ADA_TX, "data": {"person/name": "Ada Lovelace"}}
    assert json.loads(found.content[0].text) == found.structured_content
    assert missing.is_error and missing.content[0].text.startswith("Error executing tool about: ")
    assert "not found" in missing.content[0].text and missing.structured_content is None
    assert bounded.is_error and "about depth must be an integer from 0 through 2" in bounded.content[0].text
    assert invalid.is_error and "1 validation error for receiptArguments" in invalid.content[0].text
    assert unknown.is_error and unknown.content[0].text == "Unknown tool: remember"


def test_a_write_is_by_the_client_named_at_initialize():
    async def script(session, _):
        return await session.call_tool("remember", {"text": "Ada prefers vim", "operation_id": "op-1"})
    result = served(script, write=True)
    assert not result.is_error
    assert {"a": "fgraph/by", "v": "mcp:probe"}.items() <= next(
        fact for fact in result.structured_content["data"]["asserted"] if fact["a"] == "fgraph/by").items()


@pytest.mark.parametrize(("uri", "code"), [("fgraph://tx/99", -32603), ("fgraph://nothing", -32602)])
def test_a_failing_read_is_a_json_rpc_error_carrying_the_uri(uri, code):
    async def script(session, _):
        with pytest.raises(MCPError) as caught:
            await session.read_resource(uri)
        return caught.value.error
    error = served(script)
    assert error.code == code and error.data == {"uri": uri} and error.message


def test_a_read_answers_its_json_body_and_the_lists_are_the_registry():
    async def script(session, _):
        page = await session.read_resource("fgraph://entity/ada")
        templates = await session.list_resource_templates()
        return page, templates, await session.list_resources(), await session.list_prompts()
    page, templates, resources, prompts = served(script)
    (content,) = page.contents
    assert content.mime_type == "application/json" and [item["v"] for item in json.loads(content.text)["items"]] == [
        "Ada Lovelace"]
    assert [t.name for t in templates.resource_templates][:2] == ["fgraph schema", "fgraph entity"]
    assert resources.resources == [] and prompts.prompts == []


def test_an_unknown_prompt_is_error_code_zero():
    async def script(session, _):
        with pytest.raises(MCPError) as caught:
            await session.get_prompt("x")
        return caught.value.error
    error = served(script)
    assert (error.code, error.message) == (0, "Unknown prompt: x")
