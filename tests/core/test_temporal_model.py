"""Temporal semantics against a naive in-memory model: current state, as-of at every
transaction, and history, for random sequences of assertions and retractions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import fgraph
from tests.support.clock import stepping_clock

ENTITIES = ["e1", "e2", "e3"]
ONE, MANY = "m/one", "m/many"
ops = st.tuples(st.sampled_from(["assert", "retract"]), st.sampled_from(ENTITIES),
                st.sampled_from([ONE, MANY]), st.integers(0, 3))


@st.composite
def transactions(draw):
    """Each transaction touches every (e, a) at most once, so intra-transaction order cannot matter."""
    chosen = draw(st.lists(ops, min_size=1, max_size=4, unique_by=lambda op: (op[1], op[2])))
    return [list(op) for op in chosen]


class Model:
    def __init__(self):
        self.facts = []         # dicts: e, a, v, tx, rx
        self.created = {}       # name -> tx that created it

    def live(self, e, a, at=None):
        return [f for f in self.facts if f["e"] == e and f["a"] == a and self.visible(f, at)]

    @staticmethod
    def visible(f, at):
        if at is None:
            return f["rx"] is None
        return f["tx"] <= at and (f["rx"] is None or f["rx"] > at)

    def apply(self, ops, tx):
        changed = False
        for kind, e, a, v in ops:
            current = self.live(e, a)
            if kind == "assert":
                for name in (e, a):
                    if name not in self.created:
                        self.created[name] = tx
                        changed = True
                if any(f["v"] == v for f in current):
                    continue
                if a == ONE:
                    for f in current:
                        f["rx"] = tx
                self.facts.append({"e": e, "a": a, "v": v, "tx": tx, "rx": None})
                changed = True
            else:
                for f in current:
                    if f["v"] == v:
                        f["rx"] = tx
                        changed = True
        return changed

    def entity(self, e, at=None):
        out = {}
        for a in (ONE, MANY):
            vals = [f["v"] for f in self.live(e, a, at)]
            if vals:
                out[a] = vals if a == MANY else vals[0]
        return out


@settings(max_examples=60, deadline=None)
@given(history=st.lists(transactions(), min_size=1, max_size=10))
def test_current_as_of_and_history_match_model(history):
    db = fgraph.connect(":memory:", clock=stepping_clock())
    try:
        db.declare(MANY, many=True)
        model = Model()
        model.created[MANY] = db.latest_tx()
        txs = []
        for ops in history:
            report = db.transact(ops)
            expected_tx = db.latest_tx() if report["status"] == "applied" else None
            if report["status"] == "applied":
                # The model uses the real tx id, so it replays the same transaction numbers.
                changed = model.apply(ops, report["tx"])
                assert changed, ops
                txs.append(report["tx"])
            else:
                assert not model.apply(ops, expected_tx), ops
        for e in ENTITIES:
            if e not in model.created:
                continue
            assert db.entity(e) == model.entity(e)
            for tx in txs:
                if tx >= model.created[e]:
                    assert db.at(tx).entity(e) == model.entity(e, tx), (e, tx)
            rows = [(h["a"], h["v"], h["tx"], h["rx"]) for h in db.history(e)]
            assert rows == [(f["a"], f["v"], f["tx"], f["rx"]) for f in model.facts if f["e"] == e]
    finally:
        db.close()
