"""``info``/``stats()`` figures read through narrow indexes (fgraph/core/stats.py) equal the
plain definitions of spec 09 §6.1 at every basis of random histories: updates and retractions,
long texts, long bytes and vectors kept as blobs (shared and collected), names with a slash that
are not attributes, anonymous entities, excisions."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings, strategies as st

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.stats_history import STEP, declare, plain, play


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=25))
def test_the_figures_equal_the_plain_definitions_at_every_basis(tmp_path_factory, steps):
    path = str(tmp_path_factory.mktemp("stats") / "s.db")
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        declare(db)
        for step in steps:
            play(db, step)
        txs = [tx for (tx,) in db.connection.execute("SELECT tx FROM fgraph_events ORDER BY tx")]
        for tx in txs:
            view = db.at(tx)
            got = view.stats()
            assert {k: v for k, v in got.items() if k in plain(db.connection, tx)} == plain(db.connection, tx)
            assert (got["application_id"], got["format_version"]) == (1718055521, 2)
            assert got["size"] == os.path.getsize(path)
