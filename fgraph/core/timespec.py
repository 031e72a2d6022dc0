"""Relative durations for options that take a point in time (``--since 24h``, ``--at 90m``).

A duration is one or more ``<digits><unit>`` groups, largest unit first (``90m``, ``1h30m``,
``7d``, ``2w``), read as "that long before now". ``now`` is the database's clock, so
``FGRAPH_CLOCK`` makes the result deterministic in tests. Transaction ids and instants stay
integers and RFC 3339 text stays text: this module only claims what neither of them can be, and
names the shape of an event UUID (core/timepoints resolves every form).
"""

from __future__ import annotations

import re

from fgraph.core.errors import ValueTypeError
from fgraph.core.limits import INSTANT_MIN

_UNIT_US = {"w": 7 * 86_400_000_000, "d": 86_400_000_000, "h": 3_600_000_000, "m": 60_000_000,
            "s": 1_000_000}
_DURATION = re.compile(r"(?:(\d{1,9})w)?(?:(\d{1,9})d)?(?:(\d{1,9})h)?(?:(\d{1,9})m)?(?:(\d{1,9})s)?")
EVENT_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
DURATION_HINT = "write a duration such as 90m, 24h, 7d or 1h30m (units w, d, h, m, s)"


def duration_us(text: object) -> int | None:
    """Microseconds of a duration such as ``90m`` or ``1h30m``; None when ``text`` is not one."""
    if not isinstance(text, str) or not text or text[-1] not in _UNIT_US:
        return None
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.groups()):
        return None
    return sum(int(n) * _UNIT_US[unit] for n, unit in zip(match.groups(), "wdhms") if n)


def instant_before(now: int, text: str) -> int:
    """The instant ``text`` (a duration) before ``now``, the first instant of year 1 at the
    earliest: a window longer than the calendar starts where every store starts, at its beginning."""
    span = duration_us(text)
    if span is None:
        raise ValueTypeError(f"{text!r} is not a duration", DURATION_HINT)
    return max(now - span, INSTANT_MIN)
