"""The type aliases that more than one module of the core and the façade share (issue 46 item 6).

They are names for the reader and the type checker only: nothing here exists at run time beyond
the aliases themselves, and no module needs to import this one to work.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeAlias

import apsw

# A JSON value as orjson reads and writes it (None, bool, int, float, str, list, dict with str
# keys, nested). ``Any`` rather than a recursive union: the code narrows a value by inspecting it,
# which a recursive union would make every caller spell out again.
JSON: TypeAlias = Any

# A JSON object: a transaction's entity map, a report, a stored setting.
JSONObject: TypeAlias = dict[str, Any]

# One SQLite column value as apsw binds and returns it.
SQLValue: TypeAlias = int | float | str | bytes | None

# An open store's connection, named for the modules that may not import apsw (the façade, the wings
# above core: only core, streams, ops and query touch SQLite).
Connection: TypeAlias = apsw.Connection

# What the façade's methods take (fgraph.db): a file path as the caller has it; a point in time as
# ``at()`` takes it (a transaction id, an instant in µs, RFC 3339 text or a duration such as ``24h``);
# an event/1 or snapshot/1 stream (text, bytes, a file, or its lines); what ``backup`` tells as each
# of its phases begins (the phase's name and its size in bytes).
PathArg: TypeAlias = str | os.PathLike[str]
TimeArg: TypeAlias = int | str
StreamArg: TypeAlias = str | bytes | Iterable[str] | Iterable[bytes]
PhaseCallback: TypeAlias = Callable[[str, int], None]


class TextWriter(Protocol):
    """Where ``snapshot`` writes its text: anything with ``write(str)`` (a text file, ``sys.stdout``)."""

    def write(self, text: str, /) -> object: ...
