"""The spec table registered with the SDK (fgraph/mcp/registry.py): the tool list a client sees
is the table's (names, order, required arguments, defaults, bounds, annotations), the write tools
only with --write; and no module reaches into the SDK's private attributes (issue 46 item 3)."""

from __future__ import annotations

import ast
import pathlib

import anyio
import pytest

import fgraph
from fgraph.mcp.server import build
from fgraph.mcp.specs import SPECS, TOOLS, listed

PACKAGE = pathlib.Path(fgraph.__file__).parent


def registered(write: bool, allow_excise: bool = False) -> list:
    async def tools():
        with fgraph.connect(":memory:") as db:
            return await build(db, write=write, allow_excise=allow_excise).list_tools()
    return anyio.run(tools)


@pytest.mark.parametrize("write, allow_excise", [(False, False), (True, False), (True, True)])
def test_the_registered_tools_are_the_spec_table(write, allow_excise):
    tools = registered(write, allow_excise)
    assert [tool.name for tool in tools] == [spec.name for spec in listed(write=write, allow_excise=allow_excise)]
    for tool in tools:
        spec = SPECS[tool.name]
        schema = tool.input_schema
        assert tool.description == spec.description and tool.title is None
        assert schema["title"] == f"{spec.name}Arguments"
        assert list(schema["properties"]) == [param.name for param in spec.params], spec.name
        assert schema.get("required", []) == [param.name for param in spec.params if param.required], spec.name
        for param in spec.params:
            stated = schema["properties"][param.name]
            assert ("default" not in stated) is param.required, (spec.name, param.name)
            if not param.required:
                assert stated["default"] == param.default and type(stated["default"]) is type(param.default)
            assert (stated.get("minimum"), stated.get("maximum")) == (param.minimum, param.maximum)
            assert stated.get("enum", []) == list(param.choices)
        hints = tool.annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (
            spec.hints.read_only, spec.hints.destructive, spec.hints.idempotent, spec.hints.open_world)
        assert tool.output_schema == {"type": "object", "additionalProperties": True,
                                      "title": f"{spec.name}DictOutput"}


def test_write_tools_exist_only_with_write_and_are_the_ones_that_are_not_read_only():
    writes = [spec.name for spec in TOOLS if spec.needs_write]
    assert writes == ["remember", "forget", "undo", "excise"]
    assert all(spec.needs_write is not spec.hints.read_only for spec in TOOLS)
    assert not set(writes) & {tool.name for tool in registered(False)}
    assert not set(writes) & {tool.name for tool in registered(False, allow_excise=True)}  # never without --write
    # --write lists the published three first; excise only with --allow-excise too (decision M8, docs/mcp.md)
    assert [tool.name for tool in registered(True)][:4] == ["remember", "forget", "undo", "recall"]
    assert [tool.name for tool in registered(True, allow_excise=True)][:4] == writes


def private_sdk_reads(source: str) -> list[str]:
    """Reads of a private attribute (``x._name``, not ``self``'s or ``cls``'s), private imports
    and ``getattr(x, "_name")`` in a module that imports the MCP SDK."""
    tree = ast.parse(source)
    imports_sdk = any(isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("mcp", "mcp_types")
                      or isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("mcp", "mcp_types")
                                                              for a in node.names)
                      for node in ast.walk(tree))
    if not imports_sdk:
        return []

    def private(name: str) -> bool:
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and not (
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom) and (any(private(part) for part in (node.module or "").split("."))
                                                   or any(private(alias.name) for alias in node.names)):
            found.append(ast.unparse(node))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and private(node.args[1].value)):
            found.append(ast.unparse(node))
    return found


def test_no_module_reads_a_private_attribute_of_the_sdk():
    offenders = {str(p.relative_to(PACKAGE)): private_sdk_reads(p.read_text()) for p in PACKAGE.rglob("*.py")}
    assert {name: reads for name, reads in offenders.items() if reads} == {}
    # the check sees what it looks for
    assert private_sdk_reads("from mcp.server import X\nlow = server._lowlevel_server\n") == ["server._lowlevel_server"]
    assert private_sdk_reads("import mcp\nfrom mcp.shared._context_streams import f\n") == [
        "from mcp.shared._context_streams import f"]
    assert private_sdk_reads("import mcp\ngetattr(server, '_tool_manager')\n") == ["getattr(server, '_tool_manager')"]
    assert private_sdk_reads("import os\nos._exit\n") == []   # only modules that import the SDK
