"""The module map of ``docs/architecture.md``, generated from the modules' own docstrings so that it
cannot drift from the package (``tests/cli/test_architecture.py`` regenerates and compares).

    python -m fgraph.cli.architecture --write docs/architecture.md

The map lists every wing in the order the layers contract of ``pyproject.toml`` stacks them, each
feature folder under its wing, and each module with the first sentence of its docstring. A package
whose ``__init__`` docstring names groups of its modules (``- label: ``a``, ``b``…``, as core's
does) is listed group by group.

It reads the source files with ``ast`` and imports none of them, so it runs without the optional
extras (Datasette, NATS, …) and without loading the engine. It lives in ``cli`` beside
``reference.py``, its sibling for ``docs/cli.md``: the top wing is the one allowed to know the
whole package.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
import sys

PACKAGE = pathlib.Path(__file__).resolve().parent.parent
BEGIN = "<!-- BEGIN GENERATED MAP: python -m fgraph.cli.architecture --write docs/architecture.md -->"
END = "<!-- END GENERATED MAP -->"
# Top to bottom, as the layers contract stacks them (tests/cli/test_architecture.py compares).
WINGS = ("cli", "mcp", "bridges", "db", "ops", "query", "streams", "core")

# A sentence ends at . ! or ? followed by the end or by a space and what can start a sentence;
# "e.g." and its kind do not end one.
_SENTENCE_END = re.compile(r"[.!?](?=\s*\Z|\s+[A-Z`(\"'*_])")
_ABBREVIATIONS = ("e.g", "i.e", "etc", "cf", "vs")
# A group line of a package docstring: "- label: ``module``, ``module``" (continued lines indented).
_GROUP = re.compile(r"^- (?P<label>[^:`]+): (?P<names>``\w+``(?:,\s*``\w+``)*)[.;]?\Z")


@dataclasses.dataclass
class Module:
    """One ``.py`` file of the package: its path under ``fgraph/`` and its docstring's first sentence."""

    path: str
    summary: str


@dataclasses.dataclass
class Folder:
    """A package directory: its own summary, its modules, its subfolders and the groups it names."""

    path: str
    summary: str
    modules: list[Module]
    folders: list[Folder]
    groups: list[tuple[str, list[str]]]


def docstring(path: pathlib.Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def first_sentence(text: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    for match in _SENTENCE_END.finditer(paragraph):
        before = paragraph[:match.start()]
        if not before.endswith(_ABBREVIATIONS):
            return paragraph[:match.end()]
    # a paragraph that leads into a list ("…: ") ends the sentence there
    return paragraph[:-1] + "." if paragraph.endswith(":") else paragraph


def named_groups(text: str) -> list[tuple[str, list[str]]]:
    """The groups a package docstring names: ``[(label, [module stem, …]), …]`` in its order."""
    bullets: list[str] = []
    continuing = False
    for line in text.splitlines():
        if line.startswith("- "):
            bullets.append(line.rstrip())
            continuing = True
        elif continuing and line.startswith("  ") and line.strip():
            bullets[-1] += " " + line.strip()
        else:
            continuing = False
    groups = []
    for bullet in bullets:
        match = _GROUP.match(bullet)
        if match:
            groups.append((match["label"].strip(), re.findall(r"``(\w+)``", match["names"])))
    return groups


def _relative(path: pathlib.Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def folder(directory: pathlib.Path) -> Folder:
    text = docstring(directory / "__init__.py")
    modules = [Module(_relative(p), first_sentence(docstring(p)))
               for p in sorted(directory.glob("*.py")) if p.name != "__init__.py"]
    folders = [folder(d) for d in sorted(directory.iterdir()) if (d / "__init__.py").is_file()]
    return Folder(_relative(directory), first_sentence(text), modules, folders, named_groups(text))


def walk(package: pathlib.Path = PACKAGE) -> tuple[list[Folder | Module], Folder]:
    """The wings, top to bottom, and what sits beside them (the package's root modules and folders)."""
    root = folder(package)
    wings: list[Folder | Module] = []
    for wing in WINGS:
        found = [f for f in root.folders if f.path == wing] + [m for m in root.modules if m.path == f"{wing}.py"]
        if len(found) != 1:
            raise LookupError(f"the wing {wing!r} is neither fgraph/{wing}/ nor fgraph/{wing}.py")
        wings += found
    beside = Folder("", root.summary,
                    [m for m in root.modules if m.path.removesuffix(".py") not in WINGS],
                    [f for f in root.folders if f.path not in WINGS], [])
    return wings, beside


def unplaced(group_owner: Folder) -> tuple[list[str], list[str]]:
    """Modules of a folder that names groups but puts them in none, and names that are no module."""
    stems = [pathlib.PurePosixPath(m.path).stem for m in group_owner.modules]
    named = [name for _, names in group_owner.groups for name in names]
    return [s for s in stems if s not in named], [n for n in named if n not in stems]


def _markdown(text: str) -> str:
    return text.replace("``", "`") if text else "**(no docstring)**"


def _module_lines(modules: list[Module], base: str) -> list[str]:
    return [f"- `{m.path.removeprefix(base)}` — {_markdown(m.summary)}" for m in modules]


def _without_own_name(summary: str, name: str) -> str:
    """``ops — maintenance …`` under the heading ``ops/`` reads ``Maintenance …``."""
    for separator in (" — ", ": "):
        if summary.startswith(name + separator):
            rest = summary[len(name + separator):]
            return rest[:1].upper() + rest[1:]
    return summary


def _render_folder(node: Folder, depth: int) -> list[str]:
    name = pathlib.PurePosixPath(node.path).name
    out = [f"{'#' * depth} `{node.path}/`", "", _markdown(_without_own_name(node.summary, name)), ""]
    base = node.path + "/"
    if node.groups:
        by_stem = {pathlib.PurePosixPath(m.path).stem: m for m in node.modules}
        stray, _ = unplaced(node)
        for label, names in node.groups + ([("in no group yet", stray)] if stray else []):
            out += [f"*{label}*", ""]
            out += _module_lines([by_stem[n] for n in names if n in by_stem], base) + [""]
    elif node.modules:
        out += _module_lines(node.modules, base) + [""]
    for sub in node.folders:
        out += _render_folder(sub, depth + 1)
    return out


def render(package: pathlib.Path = PACKAGE) -> str:
    """Markdown for every wing, feature folder and module, top wing first."""
    wings, beside = walk(package)
    out = ["## The wings, module by module", "",
           "Generated from the package itself: each folder and module with the first sentence of its docstring, "
           "the wings from top to bottom.", ""]
    for wing in wings:
        if isinstance(wing, Module):
            out += [f"### `{wing.path}`", "", _markdown(wing.summary), ""]
        else:
            out += _render_folder(wing, 3)
    out += ["### Beside the wings", "", f"- `__init__.py` — {_markdown(beside.summary)}"]
    out += _module_lines(beside.modules, "")
    out += [f"- `{f.path}/` — {_markdown(f.summary)}" for f in beside.folders]
    return "\n".join(out).rstrip("\n") + "\n"


def _block():
    # ``core.docblocks`` splices it; imported when used, so importing the generator loads nothing
    # of the package it describes (tests/cli/test_architecture.py)
    from fgraph.core.docblocks import DocBlock
    return DocBlock(BEGIN, END)


def spliced(document: str, generated: str) -> str:
    """``document`` with the map between the markers replaced (markers appended when missing)."""
    return _block().spliced(document, generated)


def main(argv: list[str] | None = None) -> int:
    return _block().main(argv, render, what="the generated module map of docs/architecture.md")


if __name__ == "__main__":
    sys.exit(main())
