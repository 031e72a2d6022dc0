"""Names (spec 03 §2): entity names, attribute names and the reserved fgraph/ namespace."""

from __future__ import annotations

import re

from fgraph.core.canonical import short_repr
from fgraph.core.errors import SchemaError, ValueTypeError
from fgraph.core.genesis import system_names
from fgraph.core.limits import MAX_NAME_BYTES

ATTRIBUTE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*\Z")
# Unicode category Cc is exactly C0, DEL and C1; a regex checks it in C.
CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")
SURROGATE_RE = re.compile("[\ud800-\udfff]")


# Names already found valid: a stream or a busy writer checks the same few names again and
# again. Bounded; cleared when full (a cache of a pure function, never a source of truth).
KNOWN_NAMES: set[str] = set()
KNOWN_ATTRIBUTES: set[str] = set()
KNOWN_NAMES_LIMIT = 8192


NAME_RULE = f"names are 1-{MAX_NAME_BYTES} UTF-8 bytes without control characters"


def name_size(name: str) -> int:
    """The UTF-8 bytes of ``name`` (a lone surrogate counted as its three bytes)."""
    return len(name.encode("utf-8", "surrogatepass"))


def too_long(name: str) -> bool:
    """Longer than any name can be: no store holds it, so nothing need look for it (a lookup of
    such a text would build LIKE patterns SQLite refuses as "too complex" past 50,000 bytes)."""
    return len(name) > MAX_NAME_BYTES or (len(name) * 4 > MAX_NAME_BYTES and name_size(name) > MAX_NAME_BYTES)


def described(name: str) -> str:
    """``name`` for an error message: its repr, cut short with its size when it is over-long."""
    if not too_long(name):
        return repr(name)
    return f"{short_repr(name)} ({name_size(name)} bytes; no name is longer than {MAX_NAME_BYTES} UTF-8 bytes)"


def check_name(name: object, what: str = "name") -> str:
    if type(name) is str and name in KNOWN_NAMES:
        return name
    if not isinstance(name, str):
        raise ValueTypeError(f"{what} {name!r} is not a string", "use a text name or an id")
    if too_long(name):
        raise ValueTypeError(f"invalid {what} {described(name)}", NAME_RULE)
    size = name_size(name)
    if not 1 <= size <= MAX_NAME_BYTES or CONTROL_RE.search(name):
        raise ValueTypeError(f"invalid {what} {name!r}", NAME_RULE)
    if SURROGATE_RE.search(name):
        raise ValueTypeError(f"invalid {what} {name!r}: lone surrogate", "use valid Unicode text")
    _remember(KNOWN_NAMES, name)
    return name


def _remember(known: set[str], name: str) -> None:
    if len(known) >= KNOWN_NAMES_LIMIT:
        known.clear()
    known.add(name)


def check_attribute_name(name: object) -> str:
    if type(name) is str and name in KNOWN_ATTRIBUTES:
        return name
    if not isinstance(name, str) or not ATTRIBUTE_RE.match(name):
        raise SchemaError(f"invalid attribute name {short_repr(name)}",
                          "attribute names look like 'namespace/name' (lowercase, digits, . _ -)")
    if too_long(name):   # an attribute is an entity named by its name: the same bound, the same error
        raise ValueTypeError(f"invalid attribute name {described(name)}", NAME_RULE)
    if name.startswith("fgraph/") and name not in system_names():
        raise SchemaError(f"attribute {name!r} is in the reserved fgraph/ namespace",
                          "choose another namespace")
    _remember(KNOWN_ATTRIBUTES, name)
    return name
