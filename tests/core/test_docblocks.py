"""Proves fgraph/core/docblocks.py: a generated block is replaced between its markers and nothing
else of the file changes, a file without the markers gets them appended, and the generators' command
line prints or writes; docs/cli.md, docs/mcp.md and docs/architecture.md are spliced by it alone."""

from __future__ import annotations

import pathlib

import fgraph
from fgraph.core.docblocks import DocBlock

PACKAGE = pathlib.Path(fgraph.__file__).parent
BLOCK = DocBlock("<!-- BEGIN X -->", "<!-- END X -->")


def test_the_text_between_the_markers_is_replaced_and_the_rest_kept():
    document = "# Title\n\nbefore\n\n<!-- BEGIN X -->\n\nold\nlines\n<!-- END X -->\n\nafter\n"
    assert BLOCK.spliced(document, "new\n") == "# Title\n\nbefore\n\n<!-- BEGIN X -->\n\nnew\n\n<!-- END X -->\n\nafter\n"
    # splicing what is there already changes nothing (the generators' tests compare this way)
    once = BLOCK.spliced(document, "new\n")
    assert BLOCK.spliced(once, "new\n") == once


def test_a_document_without_both_markers_gets_the_block_appended():
    assert BLOCK.spliced("# Title\n\n\n", "new\n") == "# Title\n\n<!-- BEGIN X -->\n\nnew\n\n<!-- END X -->\n"
    half = "text\n<!-- BEGIN X -->\n"
    assert BLOCK.spliced(half, "n\n").startswith(half.rstrip() + "\n\n<!-- BEGIN X -->\n\nn\n")


def test_main_prints_or_writes(tmp_path, capsys):
    assert BLOCK.main([], lambda: "generated\n", what="the block") == 0
    assert capsys.readouterr().out == "generated\n"
    target = tmp_path / "doc.md"
    target.write_text("head\n<!-- BEGIN X -->\nstale\n<!-- END X -->\ntail\n", encoding="utf-8")
    assert BLOCK.main(["--write", str(target)], lambda: "fresh\n", what="the block") == 0
    assert target.read_text(encoding="utf-8") == "head\n<!-- BEGIN X -->\n\nfresh\n\n<!-- END X -->\ntail\n"
    assert capsys.readouterr().out == ""


def test_every_generator_splices_through_it():
    from fgraph.cli import architecture, reference as cli_reference
    from fgraph.mcp import reference as mcp_reference
    for module in (architecture, cli_reference, mcp_reference):
        document = f"a\n{module.BEGIN}\nold\n{module.END}\nb\n"
        assert module.spliced(document, "y\n") == DocBlock(module.BEGIN, module.END).spliced(document, "y\n")
        assert module.spliced("x", "y\n") == DocBlock(module.BEGIN, module.END).spliced("x", "y\n")
    copies = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                    if p.name != "docblocks.py" and "rest.split(" in p.read_text())
    assert copies == []
