"""Proves what every log adapter of ``fgraph sync`` must do (the ``Log`` interface of
fgraph/bridges/sync/log.py; docs/replication.md "Adding a log adapter"), once per adapter in the
registry (fgraph/bridges/sync/adapters): a store's records come out in the order they went in;
the same message id twice is stored once; a publisher resumes from what the log holds and a
consumer from its acknowledgements; an append after a predecessor that is not the subject's last,
or into a log that does not exist, is refused; forgetting's side records are kept, found and
delivered, and erasing records leaves the subject appendable; a record's seal comes back with it;
pending counts what a consumer has not acknowledged. End to end, two stores published through the adapter and consumed into two
central stores give identical tails, and an older copy of a published store is refused.

The test iterates the registry: an adapter added there is covered here, and the test fails until
its line names a factory of tests/support/logs.py."""

from __future__ import annotations

import json
import shutil
import time
import uuid

import pytest

import fgraph
from fgraph.bridges.sync import adapters
from fgraph.bridges.sync import log as sync_log
from fgraph.bridges.sync.signing import Seal
from fgraph.core.errors import Conflict, NotFound
from tests.support import logs
from tests.support.syncing import assert_fan_in, tail

ADAPTER_NAMES = [adapter.name for adapter in adapters.DECLARED]
ACK_WAIT = 1.0          # seconds: short, so that an unacknowledged record comes back within the test


def factory_of(adapter):
    return getattr(logs, adapter.test_factory, None) if adapter.test_factory else None


def test_every_adapter_declares_a_test_factory():
    missing = [a.name for a in adapters.DECLARED if factory_of(a) is None]
    assert missing == [], "name a factory of tests/support/logs.py in the adapter's registry line (test_factory)"
    assert {"memory", "nats"} <= set(ADAPTER_NAMES)          # the registry this test iterates is the real one


@pytest.fixture(params=ADAPTER_NAMES)
def url(request, tmp_path):
    """The URL of a fresh, empty log of each registered adapter."""
    adapter = next(a for a in adapters.DECLARED if a.name == request.param)
    factory = factory_of(adapter)
    if factory is None:
        pytest.fail(f"adapter {adapter.name!r} declares no test factory (tests/support/logs.py)")
    with factory(tmp_path) as made:
        yield made


def new_store() -> str:
    return uuid.uuid4().hex          # what store_id gives: 32 hex digits, usable in a subject name


def line_of(event: str, n: int = 0) -> str:
    return json.dumps({"event": event, "n": n})


def append_events(log, store: str, count: int, prev: str | None = None) -> list[str]:
    """Append ``count`` new events under ``store`` after ``prev``; returns their ids."""
    events = []
    for n in range(count):
        event = str(uuid.uuid4())
        assert log.append(store, "src.db", line_of(event, n), event, prev) is True
        events.append(event)
        prev = event
    return events


def take(log, consumer: str, count: int, timeout: float = 30) -> list:
    """Fetch until ``count`` records have come (or fail after ``timeout`` seconds); not acknowledged."""
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} records came within {timeout} s"
        got += log.fetch(consumer, count - len(got), 0.5)
    assert len(got) == count
    return got


def nothing_more(log, consumer: str) -> bool:
    return log.fetch(consumer, 10, 0.3) == []


# ----------------------------------------------------------------- the Log interface

def test_a_stores_records_come_out_in_order_with_their_predecessor(url):
    with adapters.open_log(url) as log:
        one, two = new_store(), new_store()
        first = append_events(log, one, 3)
        other = append_events(log, two, 2)
        first += append_events(log, one, 2, prev=first[-1])
        assert log.last(one) == first[-1] and log.last(two) == other[-1] and log.last(new_store()) is None
        got = take(log, "fgraph-order", 7)
        mine = [r for r in got if r.store == one]
        assert [r.event for r in mine] == first
        assert [r.prev for r in mine] == [None, *first[:-1]]
        assert [json.loads(r.line)["event"] for r in mine] == first       # the line's bytes, unchanged
        assert [r.event for r in got if r.store == two] == other
        assert {r.kind for r in got} == {"event"}
        log.ack(got)
        assert log.pending("fgraph-order") == 0 and nothing_more(log, "fgraph-order")


def test_the_same_message_id_twice_is_stored_once(url):
    with adapters.open_log(url) as log, adapters.open_log(url) as again:
        store = new_store()
        events = append_events(log, store, 2)
        assert log.append(store, "src.db", line_of(events[1]), events[1], events[0]) is False
        assert again.append(store, "src.db", line_of(events[1]), events[1], events[0]) is False
        assert log.last(store) == events[1]
        got = take(log, "fgraph-dedup", 2)
        assert [r.event for r in got] == events and nothing_more(log, "fgraph-dedup")


def test_a_publisher_resumes_from_what_the_log_holds(url):
    store = new_store()
    with adapters.open_log(url) as log:
        events = append_events(log, store, 3)
    with adapters.open_log(url) as later:                   # another run, another machine
        assert later.last(store) == events[-1]
        events += append_events(later, store, 1, prev=events[-1])
        assert [r.event for r in take(later, "fgraph-resume", 4)] == events


def test_a_consumer_resumes_from_what_it_acknowledged(url):
    store = new_store()
    with adapters.open_log(url, ack_wait=ACK_WAIT) as log:
        events = append_events(log, store, 6)
        delivered = take(log, "fgraph-crash", 4)
        log.ack(delivered[:2])                                # then killed before acknowledging the rest
    with adapters.open_log(url, ack_wait=ACK_WAIT) as restarted:
        assert restarted.pending("fgraph-crash") == 4
        again, deadline = set(), time.monotonic() + 30
        while len(again) < 4:                                 # two redelivered after ack_wait, two never delivered
            assert time.monotonic() < deadline, f"{len(again)} of 4 records came back"
            batch = restarted.fetch("fgraph-crash", 4, 0.5)
            restarted.ack(batch)                              # at once, as a consumer does after its commit
            again |= {r.event for r in batch}
        assert again == set(events[2:])                       # never one it had acknowledged
        assert restarted.pending("fgraph-crash") == 0 and nothing_more(restarted, "fgraph-crash")


def test_a_log_refuses_an_append_after_a_predecessor_that_is_not_the_subjects_last(url):
    store = new_store()
    with adapters.open_log(url) as one, adapters.open_log(url) as two:
        first = append_events(one, store, 1)
        assert two.last(store) == first[0]
        second = append_events(one, store, 1, prev=first[0])        # the subject moved under `two`
        late = str(uuid.uuid4())
        with pytest.raises(Conflict, match="moved under this publisher"):
            two.append(store, "src.db", line_of(late), late, first[0])
        assert two.last(store) == second[0]                        # asked again, it may go on
        assert two.append(store, "src.db", line_of(late), late, second[0]) is True
        assert [r.event for r in take(two, "fgraph-two", 3)] == [first[0], second[0], late]


def test_a_log_that_does_not_exist_is_not_found_unless_created(url):
    missing = url + "Missing"
    with pytest.raises(NotFound, match="--create-stream"):
        adapters.open_log(missing)
    adapters.open_log(missing, create_stream=True).close()
    with adapters.open_log(missing) as log:
        assert log.last(new_store()) is None


def test_forgettings_side_records_are_kept_found_and_delivered_and_erasing_leaves_the_subject_appendable(url):
    store = new_store()
    with adapters.open_log(url) as log:
        events = append_events(log, store, 4)
        excision, remainder = json.dumps({"excision": events[3]}), line_of(events[1], 99)
        assert log.put(store, "remainder", events[1], remainder, "remainder:" + events[1]) is True
        assert log.put(store, "excision", "", excision, "excision:" + events[3]) is True
        assert log.put(store, "excision", "", excision, "excision:" + events[3]) is False    # once
        assert log.excision_records(store) == [excision] and log.excision_records(new_store()) == []
        assert log.remainder(store, events[1]) == remainder and log.remainder(store, events[2]) is None
        assert log.erase(store, {events[1], events[3]}) == 2          # the subject's last record among them
        report = log.erase_report()                                   # and what became of the log's other copies
        assert report["status"] in ("erased", "remains") and report["detail"]
        assert log.erase(store, {events[1]}) == 0
        assert log.excision_records(store) == [excision] and log.remainder(store, events[1]) == remainder
        after = append_events(log, store, 1, prev=events[3])          # the excision event, after its erased predecessor
        assert log.last(store) == after[0]
        got = take(log, "fgraph-forget", 5)
        assert [r.event for r in got if r.kind == "event"] == [events[0], events[2], after[0]]
        sides = sorted((r.kind, r.line) for r in got if r.kind != "event")
        assert sides == sorted([("excision", excision), ("remainder", remainder)])
        assert {r.store for r in got} == {store} and nothing_more(log, "fgraph-forget")


def test_a_records_seal_comes_back_with_it_unchanged(url):
    """The log carries seals and checks nothing (log.py verifies; docs/forgetting.md T1)."""
    store = new_store()
    with adapters.open_log(url) as log:
        event, other = str(uuid.uuid4()), str(uuid.uuid4())
        sealed = Seal("ed25519:" + "A" * 43, "sig-of-" + event)
        assert log.append(store, "src.db", line_of(event), event, None, seal=sealed) is True
        assert log.append(store, "src.db", line_of(other), other, event) is True      # unsealed: carried as such
        side = Seal("ed25519:" + "B" * 43, "sig-of-excision")
        excision = json.dumps({"excision": other})
        assert log.put(store, "excision", "", excision, "excision:" + other, seal=side) is True
        assert log.put(store, "remainder", event, line_of(event, 9), "remainder:" + event, seal=sealed) is True
        got = {r.event: r for r in take(log, "fgraph-seals", 4)}
        assert got[event].seal == sealed and got[other].seal is None
        assert got["excision:" + other].seal == side and got["remainder:" + event].seal == sealed
        assert all(r.where for r in got.values())                       # where the log keeps it, for errors
        assert [line.seal for line in log.excision_records(store)] == [side]
        assert log.remainder(store, event).seal == sealed
        assert isinstance(log.stream, str) and log.stream and "://" not in log.stream


def test_pending_counts_what_a_consumer_has_not_acknowledged_and_a_deferred_record_comes_back(url):
    store = new_store()
    with adapters.open_log(url) as log:
        events = append_events(log, store, 3)
        first = take(log, "fgraph-pending", 1)
        assert log.pending("fgraph-pending") == 3          # one delivered, two not yet: none acknowledged
        log.ack(first)
        assert log.pending("fgraph-pending") == 2
        second = take(log, "fgraph-pending", 1)
        log.defer(second)                                  # its predecessor is not in the target yet, say
        assert log.pending("fgraph-pending") == 2
        rest = take(log, "fgraph-pending", 2)
        assert sorted(r.event for r in rest) == sorted(events[1:])
        log.ack(rest)
        assert log.pending("fgraph-pending") == 0


# ----------------------------------------------------------------- stores → log → stores

def write_store(path, name: str, first: int, count: int) -> None:
    with fgraph.connect(str(path)) as db:
        for i in range(first, first + count):
            db.transact({"id": f"{name}-{i % 4}", "item/v": i, "item/src": name})


def test_two_stores_through_the_log_into_two_centrals_with_identical_tails(url, tmp_path):
    for name in ("a", "b"):
        write_store(tmp_path / f"{name}.db", name, 0, 2)
    shutil.copy(tmp_path / "a.db", tmp_path / "old.db")          # a copy that will fall behind
    for name in ("a", "b"):
        write_store(tmp_path / f"{name}.db", name, 2, 5)
    sources = [tmp_path / "a.db", tmp_path / "b.db"]
    published = adapters.sync(sources, url, batch_size=3)
    assert (published["events"], published["published"], published["duplicates"]) == (14, 14, 0)
    for central in ("central1.db", "central2.db"):
        consumed = adapters.sync([url], tmp_path / central, batch_size=4)
        assert (consumed["events"], consumed["applied"]) == (14, 14)
        assert_fan_in(tmp_path, central, names=("a", "b"))
    assert tail(tmp_path / "central1.db") == tail(tmp_path / "central2.db")
    assert adapters.sync(sources, url)["published"] == 0                 # where each stands comes from the log
    write_store(tmp_path / "b.db", "b", 7, 2)
    assert [s["published"] for s in adapters.sync(sources, url)["sources"]] == [0, 2]
    assert adapters.sync([url], tmp_path / "central1.db")["applied"] == 2
    assert adapters.sync([url], tmp_path / "central1.db")["events"] == 0
    with adapters.open_log(url) as log, pytest.raises(Conflict, match="which that store does not have"):
        sync_log.publish([tmp_path / "old.db"], log)


# ----------------------------------------------------------------- foreign messages (issue 48 item 3)

def test_a_message_that_is_no_fgraph_record_comes_as_foreign_with_its_subject_and_sequence(url):
    from tests.support.foreign import publish_foreign
    with adapters.open_log(url) as log:
        store = new_store()
        events = append_events(log, store, 2)
        raw = b"\xff\xfe not utf-8, no headers"
        seq = publish_foreign(url, "other", raw)
        spoofed = publish_foreign(url, "other", b"{}", {"Fgraph-Store": store, "Nats-Msg-Id": str(uuid.uuid4())})
        got = take(log, "c", 4)
        assert [r.event for r in got if not r.foreign] == events and all(r.kind == "event" for r in got[:2])
        foreign = {r.sequence: r for r in got if r.foreign}
        assert set(foreign) == {seq, spoofed}
        assert foreign[seq].subject == f"{log.stream}.other" and foreign[seq].size == len(raw)
        assert "headers" in foreign[seq].foreign and "subject" in foreign[spoofed].foreign
        assert f"sequence {seq}" in foreign[seq].where and foreign[seq].line.startswith("\\xff\\xfe not utf-8")
        log.ack(got)
        assert nothing_more(log, "c") and log.pending("c") == 0


def test_a_publisher_steps_over_a_foreign_message_on_its_own_subject_and_resumes_after_its_last_record(url):
    from tests.support.foreign import publish_foreign
    with adapters.open_log(url) as log:
        store = new_store()
        first = append_events(log, store, 2)
        publish_foreign(url, store, b"hello from another application")
        more = append_events(log, store, 1, prev=first[-1])            # no Conflict blaming another publisher
        publish_foreign(url, store, b"and again")
    with adapters.open_log(url) as log:
        assert log.last(store) == more[-1]                               # the foreign message is not its last
        append_events(log, store, 1, prev=more[-1])
        with adapters.open_log(url) as other:                            # a real second publisher still conflicts
            other.last(store)
            append_events(log, store, 1)
            with pytest.raises(Conflict, match="another `fgraph sync` publishes the same store"):
                append_events(other, store, 1)
