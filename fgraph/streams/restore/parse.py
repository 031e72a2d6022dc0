"""A snapshot line parsed, and proved to be its record's canonical bytes, without encoding it again.

Restore hashes the canonical bytes of every record (spec 05 §1.4: a footer computed over other
bytes is rejected), and ``fgraph snapshot`` writes exactly those bytes, so on a stream worth
restoring every line already *is* its record's canonical encoding. ``parse_line`` proves that
instead of encoding each record a second time (issue 34 item 2):

1. ``orjson.loads`` parses the line, and ``orjson.dumps`` with sorted keys gives back exactly the
   line's bytes. Equal bytes prove what ``canonical.loads`` proves with its own round trip (no
   duplicate key: the output has one member per key; no integer widened to a float; nothing
   non-strict; valid UTF-8, with no surrounding blanks), and more: every object's keys were in
   sorted order, so the unsorted round trip ``loads`` checks gives the same bytes and it would
   return this very record.
2. The canonical encoder (``canonical.dumps_bytes``) writes a document orjson can encode as it
   is (no float, every integer signed 64-bit) as orjson's sorted output: the line itself. With
   floats it writes each as ``format_float``'s text where orjson writes its own, so when the two
   texts agree for every float the output is again the line. ``_plain`` checks exactly this,
   walking the record once without copying it.

Anything else (another spelling, a float orjson spells differently, an integer outside 64 bits,
a document too deep for ``canonical.loads``) gets None or no bytes, and the caller
takes the old path: ``canonical.loads`` and ``dumps_bytes``, with their errors.
"""

from __future__ import annotations

import orjson

from fgraph.core.canonical import MAX_DOCUMENT_DEPTH, exceeds_depth, format_float
from fgraph.core.limits import INT64_MAX, INT64_MIN

_SORT = orjson.OPT_SORT_KEYS


def parse_line(raw: bytes):
    """``(record, raw)`` when ``raw`` is exactly the canonical bytes of the record it parses to,
    ``(record, None)`` when it parses exactly as ``canonical.loads`` would but its canonical bytes
    must be encoded, and None when only ``canonical.loads`` may decide."""
    try:
        record = orjson.loads(raw)
        again = orjson.dumps(record, option=_SORT)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    if again != raw:
        return None
    if raw.count(b"[") + raw.count(b"{") > MAX_DOCUMENT_DEPTH and exceeds_depth(record, MAX_DOCUMENT_DEPTH):
        return None  # too deep: ``canonical.loads`` says so
    return record, (raw if _plain(record) else None)


def _float_agrees(x: float) -> bool:
    """Whether the canonical text of a float is orjson's text for it (a parsed float is finite)."""
    return format_float(x).encode() == orjson.dumps(x)


def _plain(o) -> bool:
    """True when the canonical encoding of ``o`` (a parsed document) is orjson's sorted output:
    every integer is signed 64-bit and every float's canonical text is orjson's."""
    t = type(o)
    if t is dict:
        items = o.values()
    elif t is list:
        items = o
    elif t is int:
        return INT64_MIN <= o <= INT64_MAX
    elif t is float:
        return _float_agrees(o)
    else:  # str, bool, None: the only other types orjson parses
        return True
    for v in items:
        t = type(v)
        if t is str or v is None or t is bool:
            continue
        if t is int:
            if INT64_MIN <= v <= INT64_MAX:
                continue
            return False
        if t is dict and len(v) == 1:  # {"eid": …}, {"instant": …}, {"ref": name}: one text inside
            for inner in v.values():
                if type(inner) is str:
                    break
                if not _plain(inner):
                    return False
            continue
        if t is float:
            if _float_agrees(v):
                continue
            return False
        if not _plain(v):
            return False
    return True
