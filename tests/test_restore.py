"""Proves streams/restore.py on its own: a restore runs the caller's final check inside its write
transaction and commits only when that check is ok; any failure leaves the destination pristine."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.streams import restore as restore_module
from tests.peerlib import deterministic_env


def snapshot_text() -> str:
    with deterministic_env():
        db = fgraph.connect(":memory:")
        try:
            db.transact([{"id": "ada", "p/n": 1, "p/s": "x" * 300}, {"p/anon": True}])
            db.transact(["retract", "ada", "p/n"])
            return db.snapshot()
        finally:
            db.close()


def test_final_check_runs_inside_the_transaction_and_can_refuse():
    text = snapshot_text()
    db = fgraph.connect(":memory:")
    try:
        seen = []

        def refusing(conn):
            seen.append(conn.getautocommit())
            return {"ok": False, "problems": ["planted"]}

        with pytest.raises(fgraph.FormatError, match="planted"):
            restore_module.restore(db.connection, text, final_check=refusing)
        assert seen == [False]                       # called inside the write transaction
        assert db.stats()["transactions"] == 1       # still pristine
        assert db.restore(text, details=True)["ok"] is True        # the real doctor accepts it
        assert db.snapshot() == text
    finally:
        db.close()


@pytest.mark.parametrize("cut", [1, 2, -1])
def test_a_truncated_snapshot_leaves_the_destination_pristine(cut):
    lines = snapshot_text().splitlines(keepends=True)
    text = "".join(lines[:cut])
    db = fgraph.connect(":memory:")
    try:
        with pytest.raises(fgraph.FgraphError):
            db.restore(text)
        assert db.stats()["transactions"] == 1
    finally:
        db.close()
