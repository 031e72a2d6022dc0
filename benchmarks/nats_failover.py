"""How long a publisher waits out the death of its stream's leader (issue 48 item 1).

Each round starts a fresh 3-node JetStream cluster on loopback (tests/support/nats.py), creates an R3
stream through every seed, connects a publisher to a node that does not lead the stream, appends a
few records, SIGKILLs the stream leader and times the next append, retried by ``sync``'s own bound
(``_retrying`` through ``publish``'s path: nats-py's NoStreamResponseError and timeouts are outages)
until the survivors have elected a leader and it goes through. Prints each round and the median and
maximum; docs/replication.md "Clusters: seeds, failover and what is waited out" quotes them:

    .venv/bin/python benchmarks/nats_failover.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = str(Path(__file__).resolve().parents[1])


def one_round(root: Path) -> float:
    sys.path.insert(0, REPO)
    from tests.support.nats import Cluster
    from fgraph.bridges.sync import adapters, log as sync_log

    def retried(call):
        return sync_log._retrying(call, 60, lambda: False)   # the bound publish and consume use
    (root / "c").mkdir()
    cluster = Cluster(root / "c").start()
    try:
        with adapters.open_log(cluster.seeds("M"), create_stream=True, replicas=3) as log:
            retried(lambda: log.last("s"))
        leader = cluster.wait_for_stream_leader("M")
        with adapters.open_log(f"{cluster.others(leader)[0].url}/M") as log:
            prev = None
            for _ in range(5):
                event = str(uuid.uuid4())
                retried(lambda: log.append("s", "bench", "{}", event, prev))
                prev = event
            cluster.kill(leader)
            started = time.monotonic()
            retried(lambda: log.append("s", "bench", "{}", str(uuid.uuid4()), prev))
            return time.monotonic() - started
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    waits = []
    for i in range(args.rounds):
        with tempfile.TemporaryDirectory() as scratch:
            waits.append(one_round(Path(scratch)))
        print(f"round {i}: the append after the stream leader's kill went through in {waits[-1]:.1f} s", flush=True)
    print(f"leader kill ridden out: median {statistics.median(waits):.1f} s, max {max(waits):.1f} s over "
          f"{len(waits)} rounds (.venv/bin/python benchmarks/nats_failover.py --rounds {args.rounds})")


if __name__ == "__main__":
    main()
