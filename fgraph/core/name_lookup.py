"""Names a reader did not find exactly (issue 30 item 2): the one entity whose name differs
only in case, and the nearest names to suggest in the NotFound that ends a lookup.

Both run only when an exact lookup missed, so a hit costs nothing. The store keeps no
case-folded index (format v2 is fixed), so they read the registry with SQLite's LIKE
(ASCII case-insensitive) and bound what they read: at most ``SCANNED`` names are compared.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, cast

from fgraph.core.genesis import A_EXCISED
from fgraph.core.limits import MAX_NAME_BYTES

if TYPE_CHECKING:
    import apsw

SCANNED = 500
SUGGESTED = 3
#: the longest pattern a name (at most MAX_NAME_BYTES) can give, every character escaped, with a % at
#: each end; far below SQLite's SQLITE_MAX_LIKE_PATTERN_LENGTH (50,000 bytes, "pattern too complex")
PATTERN_CHARS = 2 * MAX_NAME_BYTES + 2
_LIKE_SPECIAL = re.compile(r"([\\%_])")


def _like(text: str) -> str:
    return _LIKE_SPECIAL.sub(r"\\\1", text)


def _names(conn: apsw.Connection, pattern: str, basis: int | None) -> list[tuple[int, str]]:
    """Visible names like ``pattern``, but never an excised entity's: the published runtime keeps
    its name, and a guess must not bring it back (issue 47 item 4, decision F5 in docs/forgetting.md)."""
    if len(pattern) > PATTERN_CHARS:
        return []  # made from a text longer than any name: it matches none, and SQLite would refuse it
    visible = "" if basis is None else " AND created_tx <= ?"
    try:
        return cast("list[tuple[int, str]]", conn.execute(  # the registry's id and name columns
            f"SELECT id, name FROM fgraph_ids WHERE name LIKE ? ESCAPE '\\'{visible} AND id NOT IN "
            f"(SELECT v FROM fgraph_facts WHERE a = {A_EXCISED} AND t = 0) LIMIT ?",  # never an excised name
            (pattern, *(() if basis is None else (basis,)), SCANNED)).fetchall())
    except UnicodeEncodeError:
        return []  # a lone surrogate cannot match a stored name


def case_insensitive(conn: apsw.Connection, name: str, basis: int | None = None) -> int | None:
    """The id of the one visible name equal to ``name`` but for case; None if none or several."""
    folded = name.casefold()
    found = {i for i, stored in _names(conn, _like(name), basis) if stored.casefold() == folded}
    return found.pop() if len(found) == 1 else None


def nearest(conn: apsw.Connection, name: str, basis: int | None = None) -> list[str]:
    """Up to three visible names close to ``name``: those holding one of its words, then those
    sharing its first letters, ranked by similarity."""
    words = sorted(re.findall(r"\w+", name), key=len, reverse=True)
    patterns = [f"%{_like(word)}%" for word in words[:2] if len(word) >= 3] + [f"{_like(name[:3])}%"]
    seen: dict[str, None] = {}
    for pattern in patterns:
        for _, stored in _names(conn, pattern, basis):
            seen.setdefault(stored, None)
    folded = {stored.casefold(): stored for stored in seen}
    close = difflib.get_close_matches(name.casefold(), list(folded), n=SUGGESTED, cutoff=0.4)
    return [folded[c] for c in close]


def advice(conn: apsw.Connection, name: str, basis: int | None, fallback: str) -> str:
    """What to do next after ``name`` was not found: the nearest names, or ``fallback``."""
    names = nearest(conn, name, basis)
    if not names:
        return fallback
    return "did you mean " + " or ".join(repr(n) for n in names) + "? " + fallback
