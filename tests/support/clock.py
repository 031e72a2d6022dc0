"""A deterministic clock for library calls: the conformance instant, one second later at each reading."""

from __future__ import annotations

from tests.support.constants import CONFORMANCE_CLOCK


def stepping_clock(start: int = CONFORMANCE_CLOCK):
    """A clock whose first reading is ``start`` µs and each next one a second later."""
    state = [start - 1_000_000]

    def clock() -> int:
        state[0] += 1_000_000
        return state[0]

    return clock
