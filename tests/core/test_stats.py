"""``info``/``stats()`` figures read through narrow indexes (fgraph/core/stats.py) equal the
plain definitions of spec 09 §6.1 at every basis of random histories: updates and retractions,
long texts, long bytes and vectors kept as blobs (shared and collected), names with a slash that
are not attributes, anonymous entities, excisions."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings, strategies as st

import fgraph
from fgraph.core.names import ATTRIBUTE_RE
from tests.support.constants import CONFORMANCE_CLOCK


def plain(conn, basis: int) -> dict:
    """Spec 09 §6.1 word for word: one scan per figure over the tables themselves."""
    def one(sql, *args):
        return conn.execute(sql, args).fetchone()[0]
    ids = one("SELECT count(*) FROM fgraph_ids NOT INDEXED WHERE created_tx <= ?", basis)
    transactions = one("SELECT count(*) FROM fgraph_events NOT INDEXED WHERE tx <= ?", basis)
    return {
        "attributes": sum(1 for (name,) in conn.execute("SELECT name FROM fgraph_ids NOT INDEXED WHERE "
                                                        "created_tx <= ? AND name IS NOT NULL", (basis,))
                          if ATTRIBUTE_RE.match(name)),
        "blobs": one("SELECT count(DISTINCT v) FROM fgraph_facts NOT INDEXED WHERE t IN (7, 8, 9) AND tx <= ?", basis),
        "entities": ids - transactions,
        "facts": one("SELECT count(*) FROM fgraph_facts NOT INDEXED WHERE tx <= ?", basis),
        "live_facts": one("SELECT count(*) FROM fgraph_facts NOT INDEXED WHERE tx <= ? AND (rx IS NULL OR rx > ?)",
                          basis, basis),
        "transactions": transactions,
    }


LONG = "x" * 300
STEP = st.one_of(
    st.tuples(st.just("text"), st.integers(0, 5), st.sampled_from(["a", "b", LONG, LONG + "y"])),
    st.tuples(st.just("bytes"), st.integers(0, 5), st.sampled_from(["AAAA", "QUJD" * 100])),
    st.tuples(st.just("vector"), st.integers(0, 5), st.sampled_from([[1.0, 0.0], [0.0, 1.0]])),
    st.tuples(st.just("tag"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("retract"), st.integers(0, 5), st.none()),
    st.tuples(st.just("name"), st.integers(0, 5), st.sampled_from(["blob/entity/item", "plain", "x/y/z", "ns/ok"])),
    st.tuples(st.just("anonymous"), st.integers(0, 5), st.none()),
    st.tuples(st.just("excise"), st.integers(0, 5), st.none()),
)


def play(db, step) -> None:
    kind, n, value = step
    entity = f"e{n}"
    try:
        if kind == "text":
            db.transact({"id": entity, "note/text": value})
        elif kind == "bytes":
            db.transact({"id": entity, "note/raw": {"bytes": value}})
        elif kind == "vector":
            db.transact({"id": entity, "note/emb": {"vector": value}})
        elif kind == "tag":
            db.transact({"id": entity, "note/tags": [f"t{value}"]})
        elif kind == "retract":
            db.retract(entity)
        elif kind == "name":
            db.transact({"id": f"{value}-{n}" if "/" not in value else value, "other/v": n})
        elif kind == "anonymous":
            db.transact({"note/text": f"anon {n}"})
        else:
            db.excise(entity)
    except fgraph.FgraphError:
        pass   # a step the store refuses (retracting or excising what is not there) leaves no trace


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=25))
def test_the_figures_equal_the_plain_definitions_at_every_basis(tmp_path_factory, steps):
    path = str(tmp_path_factory.mktemp("stats") / "s.db")
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        db.declare("note/emb", type="vector")
        db.declare("note/tags", many=True)
        for step in steps:
            play(db, step)
        txs = [tx for (tx,) in db.connection.execute("SELECT tx FROM fgraph_events ORDER BY tx")]
        for tx in txs:
            view = db.at(tx)
            got = view.stats()
            assert {k: v for k, v in got.items() if k in plain(db.connection, tx)} == plain(db.connection, tx)
            assert (got["application_id"], got["format_version"]) == (1718055521, 2)
            assert got["size"] == os.path.getsize(path)
