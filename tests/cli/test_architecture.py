"""Proves the module map of docs/architecture.md cannot drift: it is the generator's output for the
package as it is, the generator misses no module, every module has a first sentence to show, the
wings stand in the order the layers contract enforces, and core's groups place every core module."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

from fgraph.cli import architecture
from tests.support.paths import REPO

REGENERATE = ".venv/bin/python -m fgraph.cli.architecture --write docs/architecture.md"


def package_modules() -> list[pathlib.Path]:
    return sorted(p for p in architecture.PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_docs_architecture_md_map_is_generated_from_the_package():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert architecture.BEGIN in text and architecture.END in text
    assert architecture.spliced(text, architecture.render()) == text, \
        f"docs/architecture.md's module map is stale: run {REGENERATE}"


def test_the_map_lists_every_module_and_folder():
    rendered = architecture.render()
    missing = []
    for path in package_modules():
        relative = path.relative_to(architecture.PACKAGE)
        folder, name = relative.parent.as_posix(), relative.name
        if name == "__init__.py":
            shown = f"`{folder}/`" in rendered if folder != "." else "- `__init__.py` —" in rendered
        else:
            # a module is listed under its folder's heading by its name (by its path at the root)
            heading = f"`{folder}/`" if folder != "." else "### Beside the wings"
            section = rendered.split(heading, 1)[1] if heading in rendered else ""
            section = re.split(r"\n#{3,} ", section, maxsplit=1)[0]
            shown = f"- `{name}` —" in section or f"### `{name}`" in rendered
        if not shown:
            missing.append(str(relative))
    assert missing == []
    # a directory of modules without an __init__ would be skipped by the walk, and by the wheel
    orphans = {p.parent for p in package_modules()} - {p.parent for p in architecture.PACKAGE.rglob("__init__.py")}
    assert orphans == set()


def test_every_module_and_package_has_a_first_sentence():
    empty = [str(p.relative_to(architecture.PACKAGE)) for p in package_modules()
             if not architecture.first_sentence(architecture.docstring(p)).strip()]
    assert empty == [], "give these modules a docstring whose first sentence says what they are"


def test_the_wings_stand_in_the_order_of_the_layers_contract():
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    [layers] = [c["layers"] for c in contracts if c["type"] == "layers"]
    stacked = [name.strip().removeprefix("fgraph.") for layer in layers for name in layer.split("|")]
    assert list(architecture.WINGS) == stacked
    rendered = architecture.render()
    headings = [m for m in re.findall(r"^### `([a-z_]+)(?:/|\.py)`", rendered, re.M)]
    assert headings == stacked


def test_core_names_every_one_of_its_modules_in_exactly_one_group():
    wings, _ = architecture.walk()
    [core] = [w for w in wings if w.path == "core"]
    assert [label for label, _ in core.groups][:2] == ["format and files", "values and canonical JSON"]
    stray, unknown = architecture.unplaced(core)
    assert stray == [], f"name these core modules in a group of fgraph/core/__init__.py's docstring: {stray}"
    assert unknown == [], f"fgraph/core/__init__.py's groups name modules that do not exist: {unknown}"
    named = [name for _, names in core.groups for name in names]
    assert len(named) == len(set(named)), "a core module is named in two groups"


def test_groups_are_read_from_bullets_that_name_modules_only():
    text = ("Intro.\n\n- first group: ``a``, ``b``,\n  ``c``\n- ``physical`` — not a group line\n"
            "- prose: no modules here\n\nLater text.\n  indented, not a continuation")
    assert architecture.named_groups(text) == [("first group", ["a", "b", "c"])]


@pytest.mark.parametrize(("docstring", "sentence"), [
    ("Clause order and access paths (spec 12 §9). The plan fixes both.", "Clause order and access paths (spec 12 §9)."),
    ("Is this file an initialized fgraph database? Answered from its header.", "Is this file an initialized fgraph database?"),
    ("Reads a value, e.g. a ref. Then more.", "Reads a value, e.g. a ref."),
    ("Opens ``fgraph.core.rows`` and Litestream 0.5\nreplicas, wrapped. Next.", "Opens ``fgraph.core.rows`` and Litestream 0.5 replicas, wrapped."),
    ("The figures, each read from the narrowest b-tree:\n\n- one\n", "The figures, each read from the narrowest b-tree."),
    ("core — no full stop at all", "core — no full stop at all"),
    ("", ""),
])
def test_the_first_sentence(docstring, sentence):
    assert architecture.first_sentence(docstring) == sentence


def test_the_generator_imports_nothing_it_describes():
    """It reads sources with ast, so it runs without the extras and without loading the engine."""
    probe = ("import sys\nfrom fgraph.cli import architecture\nbefore = set(sys.modules)\narchitecture.render()\n"
             "print(' '.join(sorted(set(sys.modules) - before)))\n"
             "print(' '.join(sorted(m for m in before if m.startswith('fgraph'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    rendering_loaded, package_loaded = out.split("\n")[:2]
    assert rendering_loaded == ""
    # importing the generator loads only the package's light top: its error names and version
    assert set(package_loaded.split()) <= {"fgraph", "fgraph.cli", "fgraph.cli.architecture", "fgraph.core",
                                           "fgraph.core.errors", "fgraph.version"}
