"""The type aliases that more than one module of the core and the façade share (issue 46 item 6).

They are names for the reader and the type checker only: nothing here exists at run time beyond
the aliases themselves, and no module needs to import this one to work.
"""

from __future__ import annotations

from typing import Any, TypeAlias

# A JSON value as orjson reads and writes it (None, bool, int, float, str, list, dict with str
# keys, nested). ``Any`` rather than a recursive union: the code narrows a value by inspecting it,
# which a recursive union would make every caller spell out again.
JSON: TypeAlias = Any

# A JSON object: a transaction's entity map, a report, a stored setting.
JSONObject: TypeAlias = dict[str, Any]

# One SQLite column value as apsw binds and returns it.
SQLValue: TypeAlias = int | float | str | bytes | None
