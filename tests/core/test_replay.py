"""Proves core/replay.py: an applied record commits with the source's UUID, payload and at (as
fgraph/imported-at), unifies names, keeps eids, and rejects a created eid it never uses."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.peerlib import deterministic_env


def source_stream() -> str:
    with deterministic_env():
        db = fgraph.connect(":memory:")
        try:
            db.transact([{"id": "ada", "p/n": 1}, {"p/anon": True}])
            return "".join(line + "\n" for line in db.iter_events(64))
        finally:
            db.close()


def test_replayed_event_keeps_uuid_payload_and_time():
    stream = source_stream()
    with deterministic_env(FGRAPH_EVENT_SEED="another-seed"):
        db = fgraph.connect(":memory:")
        try:
            last_local = db.transact({"id": "ada", "p/local": 1})["tx"]
            summary = db.apply_summary(stream)
            assert summary["applied"] == 1
            mine = list(db.iter_events(last_local))
            assert "".join(line + "\n" for line in mine) == stream   # the payload, verbatim
            receipt = db.receipt(summary["basis_tx"])
            record = fgraph.core.canonical.loads(stream.strip())
            assert receipt["event"] == record["event"] and receipt["imported_at"] == record["at"]
            assert db.entity("ada") == {"p/local": 1, "p/n": 1}   # the name unified with ours
        finally:
            db.close()


def test_a_created_eid_that_no_fact_uses_is_rejected():
    record = fgraph.core.canonical.loads(source_stream().strip())
    record["created"].append({"eid": "4fdae471-2e64-57b7-bc98-bcc828aa539c"})
    text = fgraph.core.canonical.dumps(record) + "\n"
    db = fgraph.connect(":memory:")
    try:
        with pytest.raises(fgraph.ValueTypeError, match="never uses it"):
            db.apply_summary(text)
        assert db.stats()["transactions"] == 1
    finally:
        db.close()
