"""Proves what the memory log adapter (fgraph/bridges/sync/adapters/memory.py) adds to the contract
every adapter meets (test_adapters_contract.py): ``memory://NAME`` names one log for the whole
process, so two ``fgraph sync`` calls meet, and handles share records and consumers; a bad URL is
a typed error; ``drop`` forgets a log; and the registry finds it, and only it, by its scheme."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from fgraph.bridges.sync import adapters
from fgraph.bridges.sync.adapters import memory
from fgraph.core.errors import NotFound, ValueTypeError
from tests.support.syncing import assert_fan_in, write_sources


@pytest.fixture
def url():
    made = f"memory://unit-{uuid.uuid4().hex}"
    yield made
    memory.drop(made)


def test_two_sync_calls_in_one_process_meet_in_the_named_log(tmp_path, url):
    write_sources(tmp_path, 3, names=("a", "b"))
    published = adapters.sync([tmp_path / "a.db", tmp_path / "b.db"], url, create_stream=True)
    assert published["published"] == 6 and published["log"] == url
    consumed = adapters.sync([url], tmp_path / "central.db")
    assert consumed["applied"] == 6
    assert_fan_in(tmp_path, "central.db", names=("a", "b"))


def test_handles_share_records_and_durable_consumers(url):
    one, two = memory.open_log(url, create_stream=True), memory.open_log(url)
    assert one.append("s", "a.db", "line-1", "e1", None) is True
    assert two.last("s") == "e1" and two.lines("s") == ["line-1"]
    got = one.fetch("c", 10, 0)
    one.ack(got)
    assert two.pending("c") == 0 and two.fetch("c", 10, 0) == []
    assert two.fetch("other", 10, 0)[0].event == "e1"       # another consumer has its own position


def test_a_fetch_waits_for_a_record_at_most_its_wait(url):
    log = memory.open_log(url, create_stream=True)
    start = time.monotonic()
    assert log.fetch("c", 1, 0.2) == [] and 0.15 < time.monotonic() - start < 5
    publisher = threading.Thread(target=lambda: (time.sleep(0.1), log.append("s", "a.db", "l", "e", None)))
    publisher.start()
    try:
        assert [r.event for r in log.fetch("c", 1, 10)] == ["e"]   # woken by the append, long before 10 s
    finally:
        publisher.join(timeout=10)


@pytest.mark.parametrize("bad", ["memory://", "memory://a.b", "memory://x/y", "memory://x?q=1", "nats://h/S"])
def test_a_bad_memory_url_is_a_type_error(bad):
    with pytest.raises(ValueTypeError):
        memory.parse_url(bad)


def test_a_dropped_log_is_gone_and_options_it_does_not_read_are_refused(url):
    memory.open_log(url, create_stream=True).append("s", "a.db", "l", "e", None)
    memory.drop(url)
    with pytest.raises(NotFound, match="--create-stream"):
        memory.open_log(url)
    with pytest.raises(ValueTypeError, match="--replicas does not apply to a memory://NAME log"):
        adapters.open_log(url, create_stream=True, replicas=3)


def test_the_registry_finds_each_adapter_by_its_scheme():
    assert adapters.adapter_for("memory://x").name == "memory"
    assert adapters.adapter_for("TLS://h:4222/S").name == "nats"
    assert adapters.adapter_for("central.db") is None and adapters.adapter_for("./odd:name.db") is None
    with pytest.raises(ValueTypeError, match="nats://, tls://, memory://"):
        adapters.adapter_for("kafka://h/topic")
    assert adapters.url_forms("replicas") == "nats://, tls://"
    assert adapters.adapter_for("memory://x").settings == ()
