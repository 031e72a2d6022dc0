"""Proves relative durations (fgraph/core/timespec.py): which texts are durations, their length in
microseconds, and the instant that long before a given now, year 1 at the earliest (issue 30)."""

from __future__ import annotations

import pytest

from fgraph.core.errors import ValueTypeError
from fgraph.core.limits import INSTANT_MIN
from fgraph.core.timespec import duration_us, instant_before

H = 3_600_000_000


@pytest.mark.parametrize(("text", "micros"), [
    ("90m", 90 * 60_000_000), ("1h30m", 90 * 60_000_000), ("24h", 24 * H), ("7d", 7 * 24 * H),
    ("2w", 14 * 24 * H), ("1w2d3h4m5s", (9 * 24 + 3) * H + 4 * 60_000_000 + 5_000_000), ("0s", 0),
])
def test_durations(text, micros):
    assert duration_us(text) == micros


@pytest.mark.parametrize("text", ["", "m", "90", "30m1h", "1.5h", "-5m", "5 m", "1y", "2026-01-01T00:00:00Z",
                                  "1234567890s", 64, None, 1.5])
def test_what_is_not_a_duration(text):
    assert duration_us(text) is None


def test_instant_before():
    now = 1_800_000_000_000_000
    assert instant_before(now, "1h") == now - H
    with pytest.raises(ValueTypeError, match="not a duration"):
        instant_before(now, "soon")
    assert instant_before(INSTANT_MIN + H, "1h") == INSTANT_MIN
    # longer than the calendar: the beginning of every store, never an error (issue 30 item 1)
    assert instant_before(INSTANT_MIN + H, "2h") == INSTANT_MIN == instant_before(now, "999999999w")
