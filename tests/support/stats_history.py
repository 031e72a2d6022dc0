"""Random in-process histories for the ``info``/``stats()`` figures, and the figures' plain definitions
(spec 09 §6.1, one scan per figure over the tables), shared by tests/core/test_stats.py (the narrow
indexes) and tests/core/test_stats_cache.py (the counts kept beside the database).

A step is ``(kind, n, value)`` on entity ``e{n}``: texts short and long, bytes and vectors kept as blobs
(shared and collected), a many-valued tag, a retraction, an undo of a recent transaction, names with a
slash that are not attributes, an anonymous entity, an excision."""

from __future__ import annotations

from hypothesis import strategies as st

import fgraph
from fgraph.core.names import ATTRIBUTE_RE

LONG = "x" * 300
STEP = st.one_of(
    st.tuples(st.just("text"), st.integers(0, 5), st.sampled_from(["a", "b", LONG, LONG + "y"])),
    st.tuples(st.just("bytes"), st.integers(0, 5), st.sampled_from(["AAAA", "QUJD" * 100])),
    st.tuples(st.just("vector"), st.integers(0, 5), st.sampled_from([[1.0, 0.0], [0.0, 1.0]])),   # nohistory
    st.tuples(st.just("tag"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("retract"), st.integers(0, 5), st.none()),
    st.tuples(st.just("undo"), st.integers(0, 5), st.none()),
    st.tuples(st.just("name"), st.integers(0, 5), st.sampled_from(["blob/entity/item", "plain", "x/y/z", "ns/ok"])),
    st.tuples(st.just("anonymous"), st.integers(0, 5), st.none()),
    st.tuples(st.just("excise"), st.integers(0, 5), st.none()),
)


def declare(db) -> None:
    """The schema the steps write to: a vector attribute (nohistory) and a many-valued one."""
    db.declare("note/emb", type="vector")
    db.declare("note/tags", many=True)


def play(db, step) -> str:
    """Run one step; its kind, or ``"refused"`` when the store refuses it (retracting or excising what is
    not there, undoing what cannot be undone), which leaves no trace."""
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
        elif kind == "undo":
            db.undo(db.latest_tx() - n)
        elif kind == "name":
            db.transact({"id": f"{value}-{n}" if "/" not in value else value, "other/v": n})
        elif kind == "anonymous":
            db.transact({"note/text": f"anon {n}"})
        else:
            db.excise(entity)
    except fgraph.FgraphError:
        return "refused"
    return kind


def plain(conn, basis: int | None = None) -> dict:
    """Spec 09 §6.1 word for word at ``basis`` (default: the latest): one scan per figure over the tables."""
    def one(sql, *args):
        return conn.execute(sql, args).fetchone()[0]
    if basis is None:
        basis = one("SELECT max(tx) FROM fgraph_events")
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
