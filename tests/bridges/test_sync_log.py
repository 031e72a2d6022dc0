"""Proves the endpoint-neutral half of ``fgraph sync`` through a log (fgraph/bridges/sync/log.py) with
an in-memory ``Log``: a consumer applies a source's records in the source's order whatever order
the log delivers them in, a record delivered twice is applied once, a store's identity is stable
across copies and differs between stores, and a publisher resumes from what the log holds."""

from __future__ import annotations

import json
import shutil

import fgraph
from fgraph.bridges.sync import log as sync_log
from tests.bridges.test_sync_files import tail, write_sources


# ----------------------------------------------------------------- the order check, on any log

class MemoryLog:
    """A log in memory that delivers records in whatever order the test says (the Log interface)."""

    name = "memory"

    def __init__(self, records):
        self.queue, self.acked, self.deferred = list(records), [], []

    def fetch(self, consumer, limit, wait):
        out, self.queue = self.queue[:limit], self.queue[limit:]
        return out

    def ack(self, records):
        self.acked += [r.event for r in records]

    def defer(self, records):
        self.deferred += [r.event for r in records]
        self.queue += records

    def pending(self, consumer):
        return len(self.queue)

    def excision_records(self, store):
        return []


def test_a_record_delivered_before_its_predecessor_waits_for_it(tmp_path):
    write_sources(tmp_path, 4, names=("a",))
    lines = tail(tmp_path / "a.db")
    events = [json.loads(line)["event"] for line in lines]
    records = [sync_log.Record(line, event, "a", prev) for line, event, prev in zip(lines, events, [None, *events])]
    log = MemoryLog([records[2], records[3], records[0], records[1], records[0]])   # out of order, and once twice
    summary = sync_log.consume(log, tmp_path / "t.db", batch_size=2)
    assert (summary["applied"], summary["already_applied"]) == (4, 1)
    assert log.deferred[:2] == events[2:4]
    assert tail(tmp_path / "t.db") == lines                              # the source's order, whatever the log did
    assert sorted(log.acked) == sorted(events + [events[0]])


class AppendLog(MemoryLog):
    """Keeps what publishers append, per store, as a log would."""

    def __init__(self):
        super().__init__([])
        self.stores: dict = {}

    def last(self, store):
        return self.stores[store][-1][1] if self.stores.get(store) else None

    def append(self, store, source, line, event, prev):
        assert prev == self.last(store)                        # in order, after the previous one
        self.stores.setdefault(store, []).append((line, event))
        return True


def test_a_publisher_resumes_from_what_the_log_holds(tmp_path):
    write_sources(tmp_path, 5, names=("a", "b"))
    log = AppendLog()
    first = sync_log.publish([tmp_path / "a.db", tmp_path / "b.db"], log, batch_size=2)
    assert (first["events"], first["published"]) == (10, 10)
    assert sync_log.publish([tmp_path / "a.db", tmp_path / "b.db"], log)["events"] == 0
    write_sources(tmp_path, 2, first=5, names=("a",))
    again = sync_log.publish([tmp_path / "a.db"], log)
    assert again["events"] == 2 and again["sources"][0]["since"] == first["sources"][0]["position"]
    store = again["sources"][0]["store"]
    assert [line for line, _ in log.stores[store]] == tail(tmp_path / "a.db")


def test_a_store_identity_is_stable_across_copies_and_differs_between_stores(tmp_path):
    write_sources(tmp_path, 1, names=("a", "b"))
    shutil.copy(tmp_path / "a.db", tmp_path / "copy.db")
    ids = []
    for name in ("a", "b", "copy"):
        with fgraph.connect(str(tmp_path / f"{name}.db"), read_only=True) as db:
            ids.append(sync_log.store_id(db))
    assert ids[0] == ids[2] != ids[1] and len(ids[0]) == 32
    assert json.dumps(ids)  # plain strings, usable in a subject name
