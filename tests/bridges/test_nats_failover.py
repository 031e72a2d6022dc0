"""``fgraph sync`` through a JetStream cluster rides out what the cluster does (issue 48 item 1,
docs/replication.md "Clusters: seeds, failover and what is waited out"): a publisher on a surviving
node lives through the stream leader's death (nats-py's NoStreamResponseError, a 503 to a publish,
is an outage to wait out), a sync started while the cluster has no JetStream leader waits for one
(bounded: at the bound a typed error names what it waited for), a URL names several seeds and a
sync starts while one of them is down, an acknowledgement retried after an interrupted attempt is
no error, and the wait shows a line on a terminal only. Real ``nats-server`` nodes on loopback
(tests/support/nats.py); every wait is for a condition."""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.nats import Cluster, needs_server
from tests.support.syncing import FGRAPH, SOURCES, assert_fan_in, cli, consume, env, tail, wait_for, write_sources

pytest.importorskip("nats", reason="no nats-py (pip install 'fgraph[nats]')")


def count(path: Path) -> int:
    try:
        return len(tail(path)) if path.exists() else 0
    except Exception:   # the consumer is creating the file right now
        return 0


def follow(tmp: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([FGRAPH, "--json", "sync", *args, "--follow", "--batch-size", "10", "--interval", "0.05"],
                            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())


def stop_all(procs) -> list[tuple[bytes, bytes]]:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    return [proc.communicate(timeout=90) for proc in procs]


@pytest.fixture
def cluster(tmp_path):
    (tmp_path / "cluster").mkdir()
    nodes = Cluster(tmp_path / "cluster")
    yield nodes
    nodes.stop()


def make_stream(tmp: Path, url: str) -> None:
    """An R3 stream, made by ``sync --create-stream`` (which waits for the cluster's first leader
    itself), holding source a's events."""
    cli("sync", "--from", "a.db", "--to", url, "--create-stream", "--replicas", "3", cwd=tmp, timeout=180)


@needs_server
def test_killing_the_stream_leader_is_waited_out_by_a_publisher_on_a_surviving_node(tmp_path, cluster):
    cluster.start()
    write_sources(tmp_path, 200)
    make_stream(tmp_path, f"{cluster.nodes[0].url}/FAIL")
    leader = cluster.wait_for_stream_leader("FAIL")
    survivors = cluster.others(leader)
    # each connected to one surviving node only, as in the report: the leader's death must be waited out
    publisher = follow(tmp_path, *[a for n in SOURCES for a in ("--from", f"{n}.db")], "--to", f"{survivors[0].url}/FAIL")
    consumer = follow(tmp_path, "--from", f"{survivors[1].url}/FAIL", "--to", "central.db", "--ack-wait", "2")
    procs = [publisher, consumer]
    try:
        wait_for(lambda: count(tmp_path / "central.db") > 250, 90, "the first events to arrive")
        cluster.kill(leader)
        for first in range(200, 250, 10):        # commits all through the election: the publisher meets it
            write_sources(tmp_path, 10, first=first)
        wait_for(lambda: count(tmp_path / "central.db") >= 750 or any(p.poll() is not None for p in procs), 150,
                 "every event after the stream leader died")
        died = [p.poll() is not None for p in procs]
    finally:
        outs = stop_all(procs)
    assert not any(died), f"a sync died with the stream leader: {[err.decode() for _, err in outs]}"
    for proc, (_, err) in zip(procs, outs):
        assert proc.returncode == 0, err.decode()
        assert b"internal error" not in err
    assert json.loads(outs[0][0])["events"] == 750 - 200   # a's first 200 were in before
    assert_fan_in(tmp_path)


@needs_server
def test_a_sync_started_without_a_jetstream_leader_waits_for_one_bounded(tmp_path, cluster):
    from fgraph.bridges.sync import adapters, log as sync_log
    from fgraph.bridges.sync.log import LogUnavailable
    write_sources(tmp_path, 20, names=("a",))
    alone = cluster.nodes[0].start()              # one node of three: no meta leader can be elected
    started = time.monotonic()
    with adapters.open_log(f"{alone.url}/LEADERLESS", create_stream=True, replicas=3) as log:   # not "unreachable"
        with pytest.raises(LogUnavailable, match=r"gave up after waiting \d+ s \(the retry bound, 3 s\) for the log"):
            sync_log.publish([str(tmp_path / "a.db")], log, retry=3)
    assert time.monotonic() - started < 60
    # the same run started now waits for the election the other nodes bring, and publishes
    proc = subprocess.Popen([FGRAPH, "--json", "sync", "--from", "a.db", "--to", f"{alone.url}/LEADERLESS",
                             "--create-stream", "--replicas", "3"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env())
    try:
        for node in cluster.nodes[1:]:
            node.start()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["published"] == 20


@needs_server
def test_a_url_of_several_seeds_starts_while_one_is_down_and_follows_the_others(tmp_path, cluster):
    cluster.start()
    write_sources(tmp_path, 30)
    make_stream(tmp_path, cluster.seeds("SEEDS"))
    down = cluster.nodes[0]
    cluster.kill(down)
    url = cluster.seeds("SEEDS")                  # names the dead node first
    published = json.loads(cli("--json", "sync", *[a for n in SOURCES for a in ("--from", f"{n}.db")], "--to", url,
                               cwd=tmp_path, timeout=180).stdout)
    assert published["events"] == 60
    assert consume(tmp_path, url, "central.db")["applied"] == 90
    assert_fan_in(tmp_path)


@needs_server
def test_an_acknowledgement_or_hand_back_retried_after_an_interrupted_attempt_is_no_error(tmp_path, server):
    """A reconnection can interrupt ack/defer after nats-py marked a message acknowledged: the retry
    meets MsgAlreadyAckdError (a --follow consumer died of it on a broker restart) and must go on."""
    from fgraph.bridges.sync import adapters
    write_sources(tmp_path, 4, names=("a",))
    cli("sync", "--from", "a.db", "--to", f"{server.url}/ACKS", "--create-stream", cwd=tmp_path)
    with adapters.open_log(f"{server.url}/ACKS") as log:
        records = []
        wait_for(lambda: records.extend(log.fetch("fgraph-acks", 10, 0.5)) or len(records) >= 4, 30, "the records")
        log.defer(records[2:])
        log.defer(records[2:])        # handed back twice: the second is what a retry does
        log.ack(records[:2])
        log.ack(records[:2])          # acknowledged twice
        assert log.pending("fgraph-acks") == 2


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Unavailable:
    """A log that cannot answer its first ``failures`` calls (a cluster electing a leader), then holds nothing."""

    name = stream = "stub://cluster"

    def __init__(self, failures: int, message: str):
        self.failures, self.message = failures, message

    def last(self, store):
        from fgraph.bridges.sync.log import LogUnavailable
        if self.failures:
            self.failures -= 1
            raise LogUnavailable(self.message, "check the servers")
        return None


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_a_wait_shows_a_line_on_a_terminal_only_and_the_bound_is_a_typed_error(tmp_path, monkeypatch, tty):
    import fgraph
    from fgraph.bridges.sync import log as sync_log
    from fgraph.bridges.sync.log import LogUnavailable
    source = str(tmp_path / "a.db")
    fgraph.connect(source).close()
    stderr = Terminal() if tty else io.StringIO()
    monkeypatch.setattr("sys.stderr", stderr)
    flaky = Unavailable(1, "JetStream on nats://n:4222 cannot answer now (no leader)")
    assert sync_log.publish([source], flaky, retry=5)["events"] == 0
    written = stderr.getvalue()
    if tty:
        assert "waiting for the log (0 s of 5 s): JetStream on nats://n:4222 cannot answer now" in written
        assert written.endswith("\r\x1b[K")      # erased once the call went through
    else:
        assert written == ""
    down = Unavailable(10**9, "NATS server nats://n:4222 is unavailable (NoStreamResponseError)")
    started = time.monotonic()
    with pytest.raises(LogUnavailable) as error:
        sync_log.publish([source], down, retry=0.5)
    assert 0.5 <= time.monotonic() - started < 5
    assert re.match(r"gave up after waiting \d+ s \(the retry bound, 0\.5 s\) for the log: NATS server nats://n:4222 "
                    r"is unavailable \(NoStreamResponseError\)$", error.value.message)
    assert "run the same sync again" in error.value.hint and "check the servers" in error.value.hint
