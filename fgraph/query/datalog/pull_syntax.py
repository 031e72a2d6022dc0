"""The grammar of pull patterns (spec 12 §7): attribute names, ``*``, reverse ``ns/_name`` items
and one-key maps for nested refs. Parsed here, below both the query grammar (find items) and the
puller, so neither imports the other."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fgraph.core.errors import QueryError

NAME = re.compile(r"^[^/\s]+/[^/\s]+\Z")


@dataclass(frozen=True)
class PullPattern:
    """Forward names, reverse names (without the underscore), ``*`` and nested maps, in order."""

    star: bool
    forward: tuple   # attribute names
    reverse: tuple   # (key as written, attribute name)
    nested: tuple    # (attribute name, PullPattern)


def parse_pattern(raw) -> PullPattern:
    if type(raw) is not list:
        raise QueryError(f"pull pattern {raw!r} must be an array", 'write ["ns/attr", "*", {"ns/ref": [...]}]')
    star, forward, reverse, nested = False, [], [], []
    for item in raw:
        if type(item) is str:
            if item == "*":
                star = True
                continue
            _check_name(item)
            ns, name = item.split("/", 1)
            if name.startswith("_"):
                reverse.append((item, f"{ns}/{name[1:]}"))
            else:
                forward.append(item)
        elif type(item) is dict:
            if len(item) != 1:
                raise QueryError(f"pull map {item!r} must have exactly one key", 'write {"ns/ref": ["*"]}')
            ((key, sub),) = item.items()
            _check_name(key)
            if key.split("/", 1)[1].startswith("_"):
                raise QueryError(f"pull map on reverse attribute {key!r}", "reverse items take no sub-pattern")
            if type(sub) is not list:
                raise QueryError(f"pull sub-pattern of {key!r} must be an array", 'write {"ns/ref": ["*"]}')
            nested.append((key, parse_pattern(sub)))
        else:
            raise QueryError(f"pull item {item!r} is not an attribute name or a map", 'write "ns/attr" or {"ns/ref": [...]}')
    return PullPattern(star, tuple(forward), tuple(reverse), tuple(nested))


def _check_name(name: str) -> None:
    if not NAME.match(name) or name.split("/", 1)[1] in ("", "_"):
        raise QueryError(f"pull attribute {name!r} is not of the form ns/name or ns/_name", 'write "person/name"')
