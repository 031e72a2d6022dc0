"""Proves the endpoint-neutral half of ``fgraph sync`` through a log (fgraph/bridges/sync/log.py) on the
shipped memory log (fgraph/bridges/sync/adapters/memory.py): a consumer applies a source's records
in the source's order whatever order the log delivers them in, a record delivered twice is applied
once, a store's identity is stable across copies and differs between stores, and a publisher
resumes from what the log holds."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest

import fgraph
from fgraph.bridges.sync import log as sync_log
from fgraph.bridges.sync.adapters import memory
from tests.support.syncing import tail, write_sources


@pytest.fixture
def url():
    made = f"memory://sync-log-{uuid.uuid4().hex}"
    memory.open_log(made, create_stream=True).close()
    yield made
    memory.drop(made)


# ----------------------------------------------------------------- the order check, on any log

class StartsInTheMiddle(memory.MemoryLog):
    """A faulty log: its first fetch starts in the middle (records ahead of their predecessors, as
    redeliveries after a restart come after newer ones), and it loses the first acknowledgement
    (as a consumer killed between its commit and its ack would), so those records come twice."""

    fetches = acks = 0

    def order(self, ready):
        self.fetches += 1
        return ready[2:] + ready[:2] if self.fetches == 1 else ready

    def ack(self, records):
        self.acks += 1
        if self.acks > 1:
            super().ack(records)


def test_a_record_delivered_before_its_predecessor_waits_for_it(tmp_path, url):
    write_sources(tmp_path, 4, names=("a",))
    lines = tail(tmp_path / "a.db")
    with memory.open_log(url) as log:
        sync_log.publish([tmp_path / "a.db"], log)
    with StartsInTheMiddle.open(url, ack_wait=0.5) as log:
        summary = sync_log.consume(log, tmp_path / "t.db", batch_size=2)
    assert (summary["deferred"], summary["applied"], summary["already_applied"]) == (2, 4, 2)
    assert tail(tmp_path / "t.db") == lines                              # the source's order, whatever the log did


def test_a_publisher_resumes_from_what_the_log_holds(tmp_path, url):
    write_sources(tmp_path, 5, names=("a", "b"))
    log = memory.open_log(url)
    first = sync_log.publish([tmp_path / "a.db", tmp_path / "b.db"], log, batch_size=2)
    assert (first["events"], first["published"]) == (10, 10)
    assert sync_log.publish([tmp_path / "a.db", tmp_path / "b.db"], log)["events"] == 0
    write_sources(tmp_path, 2, first=5, names=("a",))
    again = sync_log.publish([tmp_path / "a.db"], memory.open_log(url))   # another handle: a new run
    assert again["events"] == 2 and again["sources"][0]["since"] == first["sources"][0]["position"]
    assert log.lines(again["sources"][0]["store"]) == tail(tmp_path / "a.db")


def test_a_store_identity_is_stable_across_copies_and_differs_between_stores(tmp_path):
    write_sources(tmp_path, 1, names=("a", "b"))
    shutil.copy(tmp_path / "a.db", tmp_path / "copy.db")
    ids = []
    for name in ("a", "b", "copy"):
        with fgraph.connect(str(tmp_path / f"{name}.db"), read_only=True) as db:
            ids.append(sync_log.store_id(db))
    assert ids[0] == ids[2] != ids[1] and len(ids[0]) == 32
    assert json.dumps(ids)  # plain strings, usable in a subject name
