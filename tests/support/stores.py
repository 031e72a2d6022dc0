"""Stores the tests build the same way in more than one module: one home for each."""

from __future__ import annotations

import fgraph
from fgraph.core.identity import seeded_event_uuid
from tests.support.clock import stepping_clock
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED


def seeded_db(path=":memory:", start: int = CONFORMANCE_CLOCK, **options) -> fgraph.Db:
    """A store whose events take their UUIDs from the conformance seed and whose clock reads ``start``,
    then one second more at each transaction, so ids, UUIDs and instants are the published ones."""
    return fgraph.connect(path, clock=stepping_clock(start),
                          event_factory=lambda tx: seeded_event_uuid(CONFORMANCE_SEED, tx), **options)
