"""The formats of ``fgraph import``: one name, one importer (``items.Importer``).

Everything that lists the formats reads this registry: the pipeline's dispatch and its error for
an unknown name, the option checks (``--mirror``), and the CLI's FORMAT choice, help and example.
Adding a format is one module and one ``register`` line at the end of this one; a program
embedding fgraph may also register its own at run time (docs/import.md, "Adding an import format").
"""

from __future__ import annotations

import re

from fgraph.bridges.importers import jsonl_log, mcp_memory
from fgraph.bridges.importers.items import OPTIONS, Importer
from fgraph.core.errors import Conflict, NotFound, ValueTypeError

FORMATS: dict[str, Importer] = {}   # in registration order: the order the help and completion show
_FORMAT_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def register(importer: Importer) -> Importer:
    """Make ``importer`` a format of ``fgraph import`` under its ``name``; returns it. Its declarations
    are checked here, so a format that would show a broken help or example is refused at once."""
    name = getattr(importer, "name", None)
    if not isinstance(name, str) or not _FORMAT_NAME.fullmatch(name):
        raise ValueTypeError(f"import format name {name!r} is not a lower-case word or words joined by '-'",
                             "name the format the way it is typed after 'fgraph import', like mcp-memory")
    if name in FORMATS:
        raise Conflict(f"import format {name!r} is registered already",
                       "choose another name, or unregister the format first")
    description = getattr(importer, "description", None)
    if not isinstance(description, str) or not description.strip() or "\n" in description:
        raise ValueTypeError(f"import format {name!r} has no one-line description",
                             "describe the format in one line; the help lists it beside the name")
    example = getattr(importer, "example", None)
    if not isinstance(example, str) or not example.startswith("fgraph ") or f" import {name} " not in example:
        raise ValueTypeError(f"import format {name!r} has no example of its own",
                             f"give a whole command line, such as: fgraph --db x.db import {name} FILE")
    options = getattr(importer, "options", None)
    if not isinstance(options, frozenset) or not options <= OPTIONS:
        raise ValueTypeError(f"import format {name!r} declares options {options!r}",
                             f"declare a frozenset of what it supports among: {', '.join(sorted(OPTIONS))}")
    if not isinstance(getattr(importer, "line_based", None), bool) or not callable(getattr(importer, "items", None)):
        raise ValueTypeError(f"import format {name!r} is not an importer",
                             "give it line_based (True or False) and items(source, context); see items.Importer")
    FORMATS[name] = importer
    return importer


def unregister(name: str) -> Importer:
    """Take a format out of the registry (a test's throwaway format, a plugin replaced); returns it."""
    try:
        return FORMATS.pop(name)
    except KeyError:
        raise NotFound(f"import format {name!r} is not registered", f"the formats are {choices()}") from None


def importer(name: str) -> Importer:
    """The importer of format ``name``; an unknown name is a ``TypeError`` listing the formats."""
    found = FORMATS.get(name)
    if found is None:
        raise ValueTypeError(f"import format {name!r} is unknown", f"choose {choices()}")
    return found


def supporting(option: str) -> list[str]:
    """The names of the formats that support ``option`` (one of ``items.OPTIONS``)."""
    return [name for name, found in FORMATS.items() if option in found.options]


def choices(names: list[str] | None = None) -> str:
    """``a``, ``a or b``, ``a, b or c``: the format names for a message."""
    names = list(FORMATS) if names is None else names
    if len(names) < 2:
        return names[0] if names else "nothing"
    return f"{', '.join(names[:-1])} or {names[-1]}"


# The built-in formats, one line each.
register(mcp_memory.IMPORTER)
register(jsonl_log.IMPORTER)
