"""Foreign and orphaned messages never stall the fleet (issue 48 item 3; fgraph/bridges/sync/quarantine.py,
docs/replication.md "Foreign and unverifiable messages (issue 48 item 3)"), against every log adapter
(a real ``nats-server -js`` on loopback and the memory log):

- a message another application published on the stream (no headers, bytes that are not UTF-8),
  or on a store's own subject, is quarantined beside the target with its subject and sequence, and
  every store's records still arrive; its publisher steps over it, blaming no other publisher;
- the quarantine is listed and purged with one command (``fgraph sync --to T --quarantined`` /
  ``--purge-quarantined``);
- a record the receiver refuses is set aside once, not refused again at every ``--follow`` cycle;
- a one-shot consumer returns once it has applied what it can, naming what waits for a
  predecessor the log does not hold (store, event, predecessor), and exits non-zero; a log that
  delivers out of order makes it neither stop early nor miss the record that waits.
"""

from __future__ import annotations

import json
import random
import threading
import uuid

import pytest

import fgraph
from fgraph.bridges.sync import adapters, quarantine
from fgraph.bridges.sync import log as sync_log
from fgraph.bridges.sync.adapters import memory
from fgraph.core.canonical import dumps
from fgraph.core.limits import GENESIS_TX
from tests.support import logs
from tests.support.foreign import publish_foreign
from tests.support.syncing import cli, store_ident as ident, wait_for, write_items as write

ADAPTERS = [a for a in adapters.DECLARED if a.name in ("memory", "nats")]
DEADLINE = 90        # seconds a one-shot consumer may take here before it counts as hung


@pytest.fixture(params=[a.name for a in ADAPTERS])
def url(request, tmp_path):
    adapter = next(a for a in ADAPTERS if a.name == request.param)
    with getattr(logs, adapter.test_factory)(tmp_path) as made:
        yield made


def events_of(path) -> list[str]:
    """The event UUIDs of ``path``'s transactions after genesis, in order."""
    with fgraph.connect(path, read_only=True) as db:
        return [json.loads(line)["event"] for _, line in db.iter_tx_events(GENESIS_TX, db.latest_tx())]


def holds(path, events) -> bool:
    with fgraph.connect(path, read_only=True) as db:
        return all(db.holds_event(e) for e in events)


@pytest.fixture
def stores(tmp_path):
    write(tmp_path / "a.db", {"id": "ada", "note/text": "one"}, {"id": "ada", "note/text": "two"},
          {"id": "ada", "note/text": "three"})
    write(tmp_path / "b.db", {"id": "bob", "note/text": "from b"})
    return tmp_path


def bounded(call, deadline: float = DEADLINE):
    """``call()`` in a thread: its result, or the error it raised; fails if it has not returned in time."""
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = call()
        except Exception as exc:          # the test looks at it
            out["error"] = exc
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(deadline)
    assert not worker.is_alive(), f"still running after {deadline} s: a one-shot consumer must return"
    return out


def test_foreign_messages_are_quarantined_and_every_store_still_arrives(stores, url):
    adapters.sync([stores / "a.db"], url)
    adapters.sync([stores / "b.db"], url)
    other = publish_foreign(url, "other.app", b"\xff\xfe\x00 binary, no headers")
    own = publish_foreign(url, ident(stores / "a.db"), b"{\"not\": \"an fgraph record\"}")
    write(stores / "a.db", {"id": "ada", "note/text": "four"})
    adapters.sync([stores / "a.db"], url)               # steps over the message on its own subject
    done = bounded(lambda: adapters.sync([url], stores / "r.db"))
    assert "error" not in done, done.get("error")
    assert done["value"]["quarantined"]["count"] == 2
    assert holds(stores / "r.db", events_of(stores / "a.db") + events_of(stores / "b.db"))
    listed = quarantine.listing(stores / "r.db")
    assert sorted(e["sequence"] for e in listed["entries"]) == sorted([other, own])
    assert all(e["reason"] == "foreign" and e["subject"] and e["why"] for e in listed["entries"])
    again = adapters.sync([url], stores / "r.db")       # acknowledged: not met again
    assert again["quarantined"]["count"] == 0 and again["quarantined"]["held"] == 2
    assert quarantine.listing(stores / "r.db", purge=True)["purged"] == 2
    assert quarantine.listing(stores / "r.db")["count"] == 0


class Counting:
    """A log handle that counts how often each record is delivered."""

    def __init__(self, log):
        self.log, self.delivered, self.fetches = log, {}, 0

    def __getattr__(self, name):
        return getattr(self.log, name)

    def fetch(self, consumer, limit, wait):
        records = self.log.fetch(consumer, limit, wait)
        self.fetches += 1
        for record in records:
            self.delivered[record.where] = self.delivered.get(record.where, 0) + 1
        return records


def test_a_refused_record_is_set_aside_once_not_refused_at_every_follow_cycle(stores, url):
    adapters.sync([stores / "a.db"], url)
    event = str(uuid.uuid4())
    line = dumps({"at": 1, "chain": {}, "event": event, "event_hash": "00", "fgraph": "excision/1", "origin": event,
                  "partial": [], "prev": None, "redacts": [], "target": "ada"})
    with adapters.open_log(url) as log:
        log.put(ident(stores / "a.db"), "excision", "", line, "excision:" + event, seal=None)   # unsigned
    stop = threading.Event()
    with adapters.open_log(url) as log:
        counting, result = Counting(log), {}

        def follow() -> None:
            try:
                sync_log.consume(counting, stores / "r.db", follow=True, interval=0.05, stop=stop.is_set)
            except fgraph.Conflict as exc:
                result["error"] = exc
        worker = threading.Thread(target=follow, daemon=True)
        worker.start()
        try:
            wait_for(lambda: quarantine.Quarantine(str(stores / "r.db")).entries, 60, "the refused record set aside")
            seen = counting.fetches
            wait_for(lambda: counting.fetches >= seen + 20, 60, "twenty more fetch cycles")
        finally:
            stop.set()
            worker.join(30)
        assert not worker.is_alive()
    refused = [where for where in counting.delivered if "excision" in where]
    assert len(refused) == 1 and counting.delivered[refused[0]] == 1, counting.delivered
    assert "is unsigned" in result["error"].message and "quarantine" in result["error"].hint
    assert holds(stores / "r.db", events_of(stores / "a.db"))
    entry, = quarantine.listing(stores / "r.db")["entries"]
    assert entry["reason"] == "refused" and entry["kind"] == "excision" and "unsigned" in entry["why"]


def missing_middle(stores, url) -> tuple[str, str, str]:
    """a and b published, then a's second event removed from the log (as max-age or a purge would):
    (a's store id, its second event, its third)."""
    adapters.sync([stores / "a.db"], url)
    adapters.sync([stores / "b.db"], url)
    first, second, third = events_of(stores / "a.db")
    with adapters.open_log(url) as log:
        assert log.erase(ident(stores / "a.db"), {second}) == 1
    return ident(stores / "a.db"), second, third


def test_a_one_shot_consumer_returns_naming_what_waits_for_a_missing_predecessor(stores, url):
    store, second, third = missing_middle(stores, url)
    done = bounded(lambda: adapters.sync([url], stores / "r.db"))
    error = done.get("error")
    assert isinstance(error, quarantine.Waiting), done
    assert store in error.message and third in error.message and f"predecessor {second}" in error.message
    assert "sequence" in error.message and error.hint
    assert holds(stores / "r.db", events_of(stores / "b.db") + events_of(stores / "a.db")[:1])


def test_the_cli_one_shot_exits_non_zero_and_lists_and_purges_the_quarantine(stores, url):
    if not url.startswith("nats"):
        pytest.skip("a memory log lives in one process; the CLI runs in another")
    store, second, third = missing_middle(stores, url)
    publish_foreign(url, "other", b"\x80 not fgraph")
    ran = cli("sync", "--from", url, "--to", "r.db", cwd=stores, check=False, timeout=DEADLINE)
    assert ran.returncode != 0
    said = ran.stderr.decode()
    assert f"event {third}" in said and f"predecessor {second}" in said and store in said and "Traceback" not in said
    listed = json.loads(cli("--json", "sync", "--to", "r.db", "--quarantined", cwd=stores).stdout)
    assert listed["count"] == 1 and listed["entries"][0]["subject"].endswith(".other")
    purged = json.loads(cli("--json", "sync", "--to", "r.db", "--purge-quarantined", cwd=stores).stdout)
    assert purged["purged"] == 1
    assert json.loads(cli("--json", "sync", "--to", "r.db", "--quarantined", cwd=stores).stdout)["count"] == 0


class ShufflingLog(memory.MemoryLog):
    """The memory log handing out what is ready in a seeded random order (a log that redelivers out of order)."""

    rng = random.Random(0)

    def order(self, ready):
        self.rng.shuffle(ready)
        return ready


@pytest.mark.parametrize("seed", range(4))
def test_out_of_order_delivery_neither_stops_early_nor_hides_the_missing_predecessor(tmp_path, seed):
    write(tmp_path / "a.db", *({"id": "ada", "note/text": f"n{n}"} for n in range(12)))
    url = f"memory://shuffled-{uuid.uuid4().hex}"
    log = ShufflingLog.open(url, create_stream=True)
    log.rng = random.Random(seed)
    try:
        sync_log.publish([tmp_path / "a.db"], log)
        events = events_of(tmp_path / "a.db")
        complete = bounded(lambda: sync_log.consume(log, tmp_path / "all.db", batch_size=3))
        assert "error" not in complete, complete.get("error")              # nothing missing: all of it, no Waiting
        assert holds(tmp_path / "all.db", events)
        assert log.erase(ident(tmp_path / "a.db"), {events[6]}) == 1
        done = bounded(lambda: sync_log.consume(log, tmp_path / "r.db", batch_size=3))
        assert isinstance(done.get("error"), quarantine.Waiting), done
        assert f"event {events[7]}" in done["error"].message and f"predecessor {events[6]}" in done["error"].message
        assert holds(tmp_path / "r.db", events[:6]) and not holds(tmp_path / "r.db", events[7:8])
    finally:
        memory.drop(url)
