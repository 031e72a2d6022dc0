"""Names (spec 03 §2): entity names, attribute names and the reserved fgraph/ namespace."""

from __future__ import annotations

import re

from fgraph.core.errors import SchemaError, ValueTypeError
from fgraph.core.genesis import system_names
from fgraph.core.limits import MAX_NAME_BYTES

ATTRIBUTE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*$")
# Unicode category Cc is exactly C0, DEL and C1; a regex checks it in C.
CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")
SURROGATE_RE = re.compile("[\ud800-\udfff]")


def check_name(name: object, what: str = "name") -> str:
    if not isinstance(name, str):
        raise ValueTypeError(f"{what} {name!r} is not a string", "use a text name or an id")
    size = len(name.encode("utf-8", "surrogatepass"))
    if not 1 <= size <= MAX_NAME_BYTES or CONTROL_RE.search(name):
        raise ValueTypeError(f"invalid {what} {name!r}",
                             "names are 1-512 UTF-8 bytes without control characters")
    if SURROGATE_RE.search(name):
        raise ValueTypeError(f"invalid {what} {name!r}: lone surrogate", "use valid Unicode text")
    return name


def check_attribute_name(name: object) -> str:
    if not isinstance(name, str) or not ATTRIBUTE_RE.match(name):
        raise SchemaError(f"invalid attribute name {name!r}",
                          "attribute names look like 'namespace/name' (lowercase, digits, . _ -)")
    if name.startswith("fgraph/") and name not in system_names():
        raise SchemaError(f"attribute {name!r} is in the reserved fgraph/ namespace",
                          "choose another namespace")
    return name
