"""A 3-node JetStream cluster under chaos with no supervisor (issue 48, the torture family
``nats-cluster-chaos``): three writer processes commit to their stores all along; each store has
its ``fgraph sync --follow`` publisher and two centrals each have a ``--follow`` consumer, every one
given every node as a seed (in its own order). Cycle after cycle, at moments set by the traffic
(the stream having grown by a random number of messages), in a random order: the stream's leader
is SIGKILLed and restarted once another node leads, a follower likewise, one publisher and one
consumer are SIGKILLed, each on its own or while the leader (before another is elected) or a
follower is down, so its next run starts in that window. Nothing restarts a sync process that ended by itself — the test fails
if one does; the test runs again only the one it killed (the restart of a node is the engine's).
At the end every central holds every event of every store exactly once, in each store's order,
both centrals have the same content digest, the stream holds each event once, and doctor is ok."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.support import chaos
from tests.support.nats import Cluster, needs_server
from tests.support.syncing import SOURCES, cli, is_subsequence, tail, wait_for, write_sources
from tests.support.torture import FULL, report, rng, size, verdict

pytest.importorskip("nats", reason="no nats-py (pip install 'fgraph[nats]')")

STREAM = "CHAOS"
CENTRALS = ("central1.db", "central2.db")
PACE = 0.03 if FULL else 0.05   # seconds between two commits of a writer
WAIT = 120                      # bound of every wait on the cluster or the fleet


def content_digest(tmp, name: str) -> str:
    return json.loads(cli("--json", "--db", name, "info", "--content-digest", cwd=tmp).stdout)["content_digest"]


@needs_server
def test_a_cluster_under_chaos_with_no_supervisor_loses_and_doubles_nothing(tmp_path):
    random = rng("nats-cluster-chaos")
    (tmp_path / "cluster").mkdir()
    cluster = Cluster(tmp_path / "cluster").start()
    writers, fleet = [], {}
    counts = Counter()
    try:
        write_sources(tmp_path, 5)
        url = cluster.seeds(STREAM)

        said = []

        def created() -> bool:
            proc = cli("sync", "--from", "a.db", "--to", url, "--create-stream", "--replicas", "3", cwd=tmp_path,
                       check=False)
            said[:] = [proc.stderr.decode(errors="replace").strip()]
            return proc.returncode == 0
        try:
            wait_for(created, WAIT, "an R3 stream to be placed")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the last attempt said: {said[-1]}") from None
        chaos.wait_healthy(cluster, STREAM)
        writers = [chaos.Writer(tmp_path, name, 1000, PACE) for name in SOURCES]

        def seeds(i: int) -> str:   # every node, the first one differing from process to process
            nodes = cluster.nodes[i % 3:] + cluster.nodes[:i % 3]
            return cluster.seeds(STREAM, nodes)
        for i, name in enumerate(SOURCES):
            fleet[f"publisher-{name}"] = chaos.Follower(tmp_path, f"publisher-{name}", [
                "--from", f"{name}.db", "--to", seeds(i), "--interval", "0.05",
                "--batch-size", str(random.choice((1, 5, 50)))])
        for i, central in enumerate(CENTRALS):
            fleet[f"consumer-{central}"] = chaos.Follower(tmp_path, f"consumer-{central}", [
                "--from", seeds(i + 1), "--to", central, "--interval", "0.05", "--ack-wait", "2",
                "--batch-size", str(random.choice((1, 16, 200)))])

        def everyone_alive() -> None:
            for writer in writers:
                writer.alive()
            for follower in fleet.values():
                follower.alive()

        def moment(what: str) -> None:
            """Returns once the stream has grown by a random number of messages: the fleet is
            publishing (a stream that stops growing for WAIT seconds fails the test)."""
            start, grow = chaos.messages(cluster, STREAM), random.randrange(1, 40)

            def grown() -> bool:
                everyone_alive()
                now = chaos.messages(cluster, STREAM)
                return start is not None and now is not None and now >= start + grow
            if start is None:
                wait_for(lambda: chaos.messages(cluster, STREAM) is not None, WAIT, f"the stream to answer before {what}")
                start = chaos.messages(cluster, STREAM)
            wait_for(grown, WAIT, f"the stream to grow by {grow} messages before {what}")

        def kill_sync(kind: str, when: str) -> None:
            victim = random.choice([k for k in sorted(fleet) if k.startswith(kind)])
            fleet[victim].kill_and_rerun()
            counts[f"{kind}_killed" + ("" if when == "alone" else f"_with_{when}_down")] += 1

        def kill_node(role: str, riders: list[str]) -> None:
            """SIGKILL the stream's leader or a follower; the sync processes of ``riders`` are killed
            and run again while it is down (for the leader: before another node leads, so they start
            in the window with no leader); the node is restarted later, once the stream has grown."""
            leader = cluster.wait_for_stream_leader(STREAM, WAIT)
            victim = leader if role == "leader" else random.choice(cluster.others(leader))
            cluster.kill(victim)
            counts[f"{role}_killed"] += 1
            for kind in riders:
                kill_sync(kind, role)
            if role == "leader":
                cluster.wait_for_stream_leader(STREAM, WAIT, not_on=victim)
            moment(f"restarting the killed {role}")
            cluster.restart(victim)
            chaos.wait_healthy(cluster, STREAM, WAIT)

        for cycle in range(size(3, 24)):
            # each sync kill happens on its own or while the leader or a follower is down
            when = {kind: random.choice(("alone", "leader", "follower")) for kind in ("publisher", "consumer")}
            actions = ["leader", "follower", *[kind for kind in when if when[kind] == "alone"]]
            random.shuffle(actions)
            for action in actions:
                moment(f"cycle {cycle}'s {action} kill")
                if action in ("leader", "follower"):
                    kill_node(action, [kind for kind in when if when[kind] == action])
                else:
                    kill_sync(action, "alone")
            everyone_alive()
            counts["cycles"] += 1

        committed = sum(writer.stop() for writer in writers)
        writers = []
        expected = [line for n in SOURCES for line in tail(tmp_path / f"{n}.db")]
        for central in CENTRALS:
            def arrived(central=central) -> bool:
                everyone_alive()
                return chaos.events_in(tmp_path / central) >= len(expected)
            wait_for(arrived, WAIT * 2, f"{central} to hold every one of the {len(expected)} events")
        for label in sorted(fleet):
            fleet[label].terminate()                      # each rode out every failure of the engine
        fleet = {}

        for central in CENTRALS:
            lines = tail(tmp_path / central)
            assert max(Counter(lines).values()) == 1, f"{central}: an event applied twice"
            assert sorted(lines) == sorted(expected), f"{central}: events lost or doubled"
            for n in SOURCES:
                assert is_subsequence(tail(tmp_path / f"{n}.db"), lines), f"{central}: {n}'s order was not kept"
            assert verdict(tmp_path / central) == "ok", central
        digests = {central: content_digest(tmp_path, central) for central in CENTRALS}
        assert len(set(digests.values())) == 1, f"the centrals differ in content: {digests}"
        held = []
        wait_for(lambda: held.append(chaos.messages(cluster, STREAM)) or held[-1] is not None, WAIT,
                 "the stream to say how many messages it holds")
        assert held[-1] == len(expected), f"lost or doubled events in the stream: {held[-1]} for {len(expected)}"
    finally:
        for writer in writers:
            writer.stop_file.touch()
            writer.proc.kill()
            writer.proc.wait(timeout=30)
        for follower in fleet.values():
            if follower.proc.poll() is None:
                follower.proc.kill()
                follower.proc.wait(timeout=30)
        cluster.stop()
    counts.update(lost=0, partial=0, tracebacks=0, hangs=0, events=len(expected), committed_live=committed,
                  sync_runs=sum(1 for _ in tmp_path.glob("*.stderr")))
    report("nats-cluster-chaos", counts)
