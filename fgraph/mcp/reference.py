"""The tool table of ``docs/mcp.md``, generated from the spec table (``fgraph.mcp.specs``) so that
it cannot drift from what a client lists (``tests/mcp/test_mcp_reference.py`` regenerates and
compares).

    python -m fgraph.mcp.reference --write docs/mcp.md
"""

from __future__ import annotations

import sys

from fgraph.core.docblocks import DocBlock
from fgraph.mcp.specs import TOOLS, Param, ToolSpec

BEGIN = "<!-- BEGIN GENERATED TOOLS: python -m fgraph.mcp.reference --write docs/mcp.md -->"
END = "<!-- END GENERATED TOOLS -->"
BLOCK = DocBlock(BEGIN, END)
spliced = BLOCK.spliced   # docs/mcp.md with the table between the markers replaced
_TYPES = {(): "any JSON", ("string",): "string", ("integer",): "integer", ("boolean",): "boolean",
          ("object",): "object", ("array",): "array"}


def render(tools: tuple[ToolSpec, ...] = TOOLS) -> str:
    """The table of tools (arguments and data) and the description each tool is listed with."""
    out = ["| tool | arguments | data |", "|---|---|---|"]
    for spec in tools:
        needs = " --" + spec.opt_in.replace("_", "-") if spec.opt_in else ""
        name = f"`{spec.name}`" + (f" (`--write{needs}`)" if spec.needs_write else "")
        arguments = "; ".join(_argument(param) for param in spec.params)
        out.append(f"| {name} | {_cell(arguments)} | {_cell(spec.returns)} |")
    groups: dict[str, list[str]] = {}
    for spec in tools:
        groups.setdefault(_hints(spec), []).append(f"`{spec.name}`")
    out += ["", "Annotations: " + "; ".join(f"{', '.join(names)}: {hints}" for hints, names in groups.items())
            + ".", "", "What a client lists as each tool's description:", ""]
    out += [f"- `{spec.name}`: {spec.description}" for spec in tools]
    return "\n".join(out) + "\n"


def _argument(param: Param) -> str:
    kind = _TYPES.get(param.types) or " or ".join(param.types)
    if param.choices:
        kind = "/".join(f"`{choice}`" for choice in param.choices)
    elif param.minimum is not None:
        kind += f" {param.minimum:,}–{param.maximum:,}"
    if param.required:
        kind += ", required"
    elif param.default is not None:
        kind += f", default {_literal(param.default)}"
    return f"`{param.name}` ({kind}): {param.description}"


def _literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    return f"`{value}`"


def _hints(spec: ToolSpec) -> str:
    hints = spec.hints
    said = [f"readOnlyHint: {_literal(hints.read_only)}", f"destructiveHint: {_literal(hints.destructive)}",
            f"idempotentHint: {_literal(hints.idempotent)}", f"openWorldHint: {_literal(hints.open_world)}"]
    return f"`{', '.join(said)}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    return BLOCK.main(argv, render, what="the generated MCP tool table")


if __name__ == "__main__":
    sys.exit(main())
