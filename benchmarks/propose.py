"""Proposing vs writing (issue 51): the cost of one `fgraph mcp --propose` call against one
`fgraph mcp --write` call, through the official SDK's stdio client.

Builds a store of N events (benchmarks/common.py) and two copies of it, starts one `--write`
server on the first and one `--propose FILE` server on the second, and makes the same `remember`
calls on both, alternating (each call's figure is its yardstick's neighbour in time), so the
pending file grows to --calls proposals while the write store grows by as many transactions.
Prints the median and p90 of each, their ratio (the issue's target: proposing at most 1.5x a
direct write, median over 1,000 calls), and what the planning copy costs: the time to rebuild it
(the store's pages serialized and deserialized, then the pending proposals applied) and its size.

    .venv/bin/python benchmarks/propose.py [--events 10000] [--calls 1000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import anyio
from common import build_store, fgraph_executable
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import Implementation

import fgraph
from fgraph.bridges.proposals.pending import ProposalFile
from fgraph.mcp.planning import PlanningCopy


def server(exe: str, path: str, *mode: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_")}
    return StdioServerParameters(command=exe, args=["--db", path, "mcp", *mode], env=env)


def arguments(i: int) -> dict:
    facts = {"id": f"bench-{i % 200}", "bench/n": i, "bench/note": f"call {i} " + "x" * (i % 40)}
    return {"facts": facts, "operation_id": f"bench-{i}", "source": "benchmarks/propose.py"}


async def measure(exe: str, direct: str, proposing: str, proposals: str, calls: int) -> dict:
    times: dict[str, list[float]] = {"write": [], "propose": []}
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server(exe, direct, "--write"), errlog=quiet) as (wr, ww), \
                stdio_client(server(exe, proposing, "--propose", proposals), errlog=quiet) as (pr, pw):
            async with ClientSession(wr, ww, client_info=Implementation(name="bench", version="1")) as writing, \
                    ClientSession(pr, pw, client_info=Implementation(name="bench", version="1")) as proposing_:
                await writing.initialize()
                await proposing_.initialize()
                for warm in range(5):   # the first calls load the planner, the schema caches, the copy
                    await writing.call_tool("remember", arguments(-1 - warm))
                    await proposing_.call_tool("remember", arguments(-1 - warm))
                for i in range(calls):
                    for name, session in (("write", writing), ("propose", proposing_)) if i % 2 else \
                            (("propose", proposing_), ("write", writing)):
                        start = time.perf_counter()
                        result = await session.call_tool("remember", arguments(i))
                        times[name].append(time.perf_counter() - start)
                        if result.is_error:
                            raise RuntimeError(f"{name} call {i} failed: {result.content[0].text}")
    return times


def copy_cost(store: str, proposals: str) -> tuple[float, float, int, int]:
    """(seconds to rebuild the copy with no proposal, with the pending file's, image MiB, proposals)."""
    pending = ProposalFile(proposals).records()
    with fgraph.connect(store, read_only=True) as db:
        copy = PlanningCopy(db)
        start = time.perf_counter()
        copy.rebuild([])
        bare = time.perf_counter() - start
        start = time.perf_counter()
        copy.rebuild(pending)
        loaded = time.perf_counter() - start
        size = len(db.connection.serialize("main"))
        copy.invalidate()
    return bare, loaded, size, len(pending)


def ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q * 100) - 1] * 1000 if q != 0.5 else statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=1_000)
    args = parser.parse_args()
    exe = fgraph_executable()
    with tempfile.TemporaryDirectory() as tmp:
        store, direct, proposals = (os.path.join(tmp, name) for name in ("store.db", "direct.db", "p.ndjson"))
        seconds = build_store(store, args.events)
        with fgraph.connect(store) as db:    # a checkpointed file: the copies are whole
            db.backup(direct)
        print(f"built {args.events} events in {seconds:.1f} s; {args.calls} remember calls each, alternating")
        times = anyio.run(measure, exe, direct, store, proposals, args.calls)
        for name in ("write", "propose"):
            print(f"  {name:8s} median {ms(times[name], 0.5):7.2f} ms   p90 {ms(times[name], 0.9):7.2f} ms")
        ratio = statistics.median(times["propose"]) / statistics.median(times["write"])
        print(f"  propose / write (medians) {ratio:.2f}  (target <= 1.5)")
        bare, loaded, size, pending = copy_cost(store, proposals)
        print(f"  planning copy: {size / 1048576:.1f} MiB image, rebuilt in {bare * 1000:.0f} ms "
              f"({loaded * 1000:.0f} ms with the {pending} pending proposals applied)")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
