"""The tool section of docs/mcp.md is generated from the spec table (fgraph/mcp/reference.py)."""

from __future__ import annotations

from fgraph.mcp import reference
from fgraph.mcp.specs import TOOLS
from tests.support.paths import REPO


def test_docs_mcp_md_tool_section_is_generated_from_the_table():
    text = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert reference.spliced(text, reference.render()) == text, \
        "docs/mcp.md is stale: run python -m fgraph.mcp.reference --write docs/mcp.md"
    section = text.split(reference.BEGIN, 1)[1].split(reference.END, 1)[0]
    for spec in TOOLS:
        assert f"| `{spec.name}`" in section and spec.description in section
        assert all(f"`{param.name}` (" in section for param in spec.params)
