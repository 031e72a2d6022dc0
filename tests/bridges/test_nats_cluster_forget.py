"""Nothing of an excision left in a JetStream cluster's files (issue 47 item 3, docs/forgetting.md
"The broker's own copies"; the code is fgraph/bridges/sync/adapters/nats_cluster_forget.py).

Three ``nats-server -js`` on loopback, each with its own store directory, hold an R3 stream a store
with canaries was published to; a durable consumer has read it. Every node's raft log holds the
canaries. After ``excise`` and the publisher's next ``sync``, the report says the raft logs were
removed on 3 of 3 nodes, and a scan of every file of every node finds no canary byte by the time
the command returns (the bound docs/forgetting.md states); the stream is back at 3 replicas with
its sequences and the consumer's position, so the consumer carries the excision out and a new one
reads the rest. A stream left at one replica by a publisher killed between the two halves is
brought back by the next ``erase``; a node that is down keeps the cycle from starting, and the
report then says what remains, until when, and the command that removes it."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time

import pytest

import fgraph
from tests.support import canaries
from tests.support.nats import Cluster, hits_on, needs_server
from tests.support.syncing import FGRAPH, cli, consume, env, publish, tail, wait_for, write_sources
from tests.support.torture import FULL

pytest.importorskip("nats", reason="no nats-py (pip install 'fgraph[nats]')")

BOUND = 0.0   # seconds after the command returns by which no node holds a canary byte (docs/forgetting.md)


def make_stream(tmp, cluster: Cluster, name: str = "R3") -> tuple[str, int]:
    """Publish ``a.db`` (canary history) into a new R3 stream, once the cluster can place it; the
    URL and how many events were published."""
    url = f"{cluster.nodes[0].url}/{name}"
    made = []

    def created() -> bool:
        proc = cli("--json", "sync", "--from", "a.db", "--to", url, "--create-stream", "--replicas", "3", cwd=tmp,
                   check=False)
        made.append(proc)
        return proc.returncode == 0
    wait_for(created, 90, "an R3 stream to be placed")
    return url, json.loads(made[-1].stdout)["published"]


def cluster_info(cluster: Cluster, stream: str) -> dict:
    return cluster.api(f"$JS.API.STREAM.INFO.{stream}")


def raft_hits(cluster: Cluster) -> list[dict]:
    return [hits_on(store, canaries.NEEDLES) for store in cluster.stores()]


def excise_ada(tmp) -> None:
    with fgraph.connect(tmp / "a.db") as db:
        db.excise("ada", operation_id="forget-ada", if_basis_tx=db.latest_tx())


@needs_server
def test_an_excision_leaves_no_canary_byte_on_any_node(tmp_path):
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 6)
    cluster = Cluster(tmp_path).start()
    try:
        url, published = make_stream(tmp_path, cluster)
        assert published > 10 and consume(tmp_path, url, "t.db")["applied"] == published
        before = raft_hits(cluster)
        assert all(any("_js_" in path for path in node) for node in before), before   # every node's raft log has them
        group = cluster_info(cluster, "R3")["cluster"]["raft_group"]
        excise_ada(tmp_path)
        start = time.monotonic()
        summary = publish(tmp_path, url, names=("a",))
        took = time.monotonic() - start
        [excision] = summary["excisions"]
        assert excision["messages_deleted"] > 0
        assert excision["broker"]["status"] == "erased", excision
        assert excision["broker"]["replication_logs"] == "removed on 3 of 3 nodes", excision
        assert raft_hits(cluster) == [{}, {}, {}]                      # BOUND: by the time the command returns
        print(f"\nexcision published with raft logs removed on 3 nodes in {took:.1f} s")
        info = cluster_info(cluster, "R3")
        assert info["config"]["num_replicas"] == 3 and "fgraph.replicas" not in (info["config"].get("metadata") or {})
        assert info["cluster"]["raft_group"] != group and len(info["cluster"]["replicas"]) == 2
        after = consume(tmp_path, url, "t.db")                         # the durable consumer kept its place
        assert [e["status"] for e in after["excisions"]] == ["applied"]
        assert canaries.canary_hits(tmp_path, "t.db") == {}
        late = consume(tmp_path, f"{cluster.nodes[2].url}/R3", "late.db")
        assert late["applied"] > 0 and [e["status"] for e in late["excisions"]] == ["nothing_here"]
        with fgraph.connect(tmp_path / "a.db", read_only=True) as source, \
                fgraph.connect(tmp_path / "late.db", read_only=True) as replica:
            assert canaries.others_state(replica) == canaries.others_state(source)

        # a publisher killed between the two halves leaves the stream at one replica with the mark
        from fgraph.bridges.sync import adapters
        config = cluster_info(cluster, "R3")["config"]
        config.update(num_replicas=1, metadata={**(config.get("metadata") or {}), "fgraph.replicas": "3"})
        assert "error" not in cluster.api("$JS.API.STREAM.UPDATE.R3", config)
        wait_for(lambda: set(cluster_info(cluster, "R3").get("cluster") or {"?"}) <= {"name", "leader", "leader_since"},
                 30, "the stream settled at one replica (no raft group, no migration)")
        with adapters.open_log(url) as log:
            assert log.erase("no-such-store", set()) == 0              # the next erase finishes the cycle
            assert log.erase_report()["replication_logs"] == "removed on 3 of 3 nodes"
        info = cluster_info(cluster, "R3")
        assert info["config"]["num_replicas"] == 3 and "fgraph.replicas" not in (info["config"].get("metadata") or {})
    finally:
        cluster.stop()


@needs_server
def test_with_a_node_down_the_report_says_what_remains_and_how_to_remove_it(tmp_path):
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 6)
    cluster = Cluster(tmp_path).start()
    try:
        url, _ = make_stream(tmp_path, cluster)
        info = cluster_info(cluster, "R3")["cluster"]
        # a follower the URL does not name: the publisher's node and the stream's leader stay up
        follower = next(p["name"] for p in info["replicas"] if p["name"] != "n0")
        down = int(follower[1:])
        cluster.nodes[down].stop(signal.SIGKILL)

        def seen_down() -> bool:
            info = cluster_info(cluster, "R3").get("cluster") or {}
            return bool(info.get("leader")) and any(p["name"] == follower and (p.get("offline") or not p.get("current"))
                                                    for p in info.get("replicas") or [])
        wait_for(seen_down, 60, "the stream to see its replica go")
        excise_ada(tmp_path)
        [excision] = publish(tmp_path, url, names=("a",))["excisions"]
        broker = excision["broker"]
        assert broker["status"] == "remains" and broker["replication_logs"] == "kept on 3 nodes", broker
        assert broker["detail"].startswith(f"not every replica is current ({follower})"), broker
        assert broker["fix"].startswith("nats stream edit R3 --replicas 1 -f, then nats stream edit R3 --replicas 3 -f")
        assert "three minutes" in broker["until"]
        running = [hits for i, hits in enumerate(raft_hits(cluster)) if i != down]
        assert all(running), "the report is true: the running nodes' raft logs still hold them"
        assert cluster_info(cluster, "R3")["config"]["num_replicas"] == 3   # nothing was changed
    finally:
        cluster.stop()


@needs_server
@pytest.mark.skipif(not FULL, reason="the long cluster run is FGRAPH_TORTURE=full")
def test_excisions_under_traffic_leave_no_canary_and_lose_nothing(tmp_path):
    """Five rounds of more history, an excision and the publisher's sync, while another store
    commits and publishes with --follow and a reader consumes with --follow: each round every node
    is clean when the command returns; both followers ride out every cycle, and the reader and a
    new consumer end with the source's data, every event of the other store and no canary."""
    with fgraph.connect(tmp_path / "a.db") as db:
        canaries.write_history(db, 6)
    write_sources(tmp_path, 20, names=("b",))
    cluster = Cluster(tmp_path).start()
    try:
        url, _ = make_stream(tmp_path, cluster)
        follower = subprocess.Popen([FGRAPH, "--json", "sync", "--from", "b.db", "--to", url, "--follow",
                                     "--interval", "0.05"], cwd=tmp_path, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env())
        reader = subprocess.Popen([FGRAPH, "--json", "sync", "--from", f"{cluster.nodes[1].url}/R3", "--to",
                                   "central.db", "--follow", "--interval", "0.05", "--ack-wait", "2"], cwd=tmp_path,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
        try:
            for round_ in range(5):
                write_sources(tmp_path, 20, first=20 * (round_ + 1), names=("b",))
                victim = "ada" if round_ == 0 else f"victim{round_}"     # ada's history, then one more each round
                with fgraph.connect(tmp_path / "a.db") as db:
                    if round_:
                        db.transact([{"id": victim, "note/text": canaries.SHORT + f"-round-{round_}"}])
                    db.transact([{"id": f"q{round_}", "note/text": f"plain {round_}"}])
                publish(tmp_path, url, names=("a",))
                assert all(raft_hits(cluster)), round_
                with fgraph.connect(tmp_path / "a.db") as db:
                    db.excise(victim, operation_id=f"forget-{victim}", if_basis_tx=db.latest_tx())
                [excision] = publish(tmp_path, url, names=("a",))["excisions"]
                assert excision["broker"]["status"] == "erased", excision
                assert raft_hits(cluster) == [{}, {}, {}], round_
            wait_for(lambda: caught_up(tmp_path, url, "b"), 120, "the follower to publish every event of b")
            wanted = set(tail(tmp_path / "b.db")[1:])                    # all but b's genesis
            wait_for(lambda: wanted <= set(tail(tmp_path / "central.db")), 120, "the reader to take every event of b")
        finally:
            outs = []
            for proc in (follower, reader):
                proc.send_signal(signal.SIGTERM)
                outs.append(proc.communicate(timeout=60))
        for proc, (_, err) in zip((follower, reader), outs):
            assert proc.returncode == 0, err.decode()                 # both rode out every cycle
        consume(tmp_path, url, "late.db")
        for name in ("late.db", "central.db"):
            with fgraph.connect(tmp_path / "a.db", read_only=True) as source, \
                    fgraph.connect(tmp_path / name, read_only=True) as replica:
                assert canaries.others_state(replica) == canaries.others_state(source), name
            assert canaries.canary_hits(tmp_path, name) == {}, name
        assert wanted <= set(tail(tmp_path / "late.db"))
    finally:
        cluster.stop()


def caught_up(tmp, url: str, name: str) -> bool:
    """The stream's last record of store ``name`` is that store's last event."""
    from fgraph.bridges.sync import adapters
    from fgraph.bridges.sync.log import event_of, store_id
    with fgraph.connect(tmp / f"{name}.db", read_only=True) as db:
        store, last = store_id(db), event_of(list(db.iter_events())[-1])
    with adapters.open_log(url) as log:
        return log.last(store) == last


class FakeApi:
    """A JetStream API stand-in for ``nats_cluster_forget``: stream info from ``states`` (the last
    one repeats), updates answered by ``update`` (a dict, or an exception to raise); records them."""

    def __init__(self, states, update):
        self.states, self.update, self.updates = list(states), update, []

    async def request(self, subject, payload, timeout):
        class Reply:
            data = b""
        if subject.startswith("$JS.API.STREAM.UPDATE."):
            self.updates.append(json.loads(payload))
            if isinstance(self.update, Exception):
                raise self.update
            Reply.data = json.dumps(self.update).encode()
        else:
            Reply.data = json.dumps(self.states.pop(0) if len(self.states) > 1 else self.states[0]).encode()
        return Reply()


R3 = {"config": {"name": "S", "num_replicas": 3},
      "cluster": {"raft_group": "S-R3F-1", "leader": "n0", "replicas": [{"name": "n1", "current": True},
                                                                          {"name": "n2", "current": True}]}}


@pytest.mark.parametrize("update, problem", [
    ({"error": {"code": 403, "err_code": 10003, "description": "not allowed"}},
     "the server refused to change the stream's replicas: not allowed (code 10003)"),
    (asyncio.TimeoutError(), "the server did not answer the request to change the stream's replicas")])
def test_a_refused_or_unanswered_scale_leaves_the_stream_and_says_what_remains(update, problem):
    from fgraph.bridges.sync.adapters import nats_cluster_forget as forget
    api = FakeApi([R3], update)
    plan = asyncio.run(forget.prepare(api, "S", True, wait=0.2))
    assert plan.problem == problem and not plan.down
    report = asyncio.run(forget.finish(api, plan, wait=0.2))
    assert report == {"status": "remains", "replication_logs": "kept on 3 nodes",
                      "detail": f"{problem}; the raft logs of stream S still hold the deleted records",
                      "until": forget.IDLE_SNAPSHOT, "fix": forget.fix("S", 3)}
    assert [u["num_replicas"] for u in api.updates] == [1]            # the one attempt, nothing else changed


def test_nothing_to_delete_and_no_owed_cycle_touches_nothing():
    from fgraph.bridges.sync.adapters import nats_cluster_forget as forget
    api = FakeApi([R3], {})
    plan = asyncio.run(forget.prepare(api, "S", False, wait=0.2))
    assert asyncio.run(forget.finish(api, plan, wait=0.2))["replication_logs"] == "untouched" and api.updates == []
