"""The users' alternatives side by side (issue 52 item 3): one agent-memory workload through three
MCP servers over stdio, in one run: ours (``fgraph --db X mcp --write``), the MCP memory server
from npm (``@modelcontextprotocol/server-memory``, its real server under node, MEMORY_FILE_PATH)
and the published fgraph 1.2 (``$FGRAPH_PEER --db X mcp --write``).

    .venv/bin/python benchmarks/peers.py [--sizes 1000 10000 100000] [--batch 100] [--bound 900]

For each size N, each server starts on an empty store and, through its own tools, with the MCP
Python SDK's stdio client (one session per server and size, every call timed from request to
answer):

1. **write**: N entities, in batches of --batch, three calls per batch: the batch's entities with
   a type and two observations each (memory server ``create_entities``; ours and published
   ``remember`` of one map per entity: ``memory/name``, ``memory/type``, ``memory/observation``,
   the mapping of ``fgraph import mcp-memory``), one relation from each entity to an entity
   already written (``create_relations``; ``remember`` of ``rel/<type>`` refs), and one more
   observation per entity (``add_observations``; ``remember``). Ours and the published server
   first get one ``remember`` that declares the four attributes (not timed);
2. **recall**: 100 questions, each the unique code word of a random entity (memory server
   ``search_nodes``, which answers every entity whose name, type or an observation contains the
   query; ours and published ``recall`` with k=10); ``found`` counts the questions whose answer
   holds that entity;
3. **read**: 100 random entities, one per call (memory server ``open_nodes``; ``about``).

Printed per server and size: write throughput (entities/s over the write phase), the p50/p99
latency of a write call, of a question and of a read, questions/s, the peak RSS of the server
process tree (VmHWM from /proc, summed over the server and its children, read before the session
ends), the size of the server's files (every file in its own directory, after the server has
exited) and the wall time. A server that cannot finish a size within --bound seconds (or any one
call within --call-bound) is stopped there and reported with how far it got. The memory server is
npm-installed (pinned, as tests/scripts/make_mcp_memory_fixture.py) under --npm-prefix, reused on
later runs. Without FGRAPH_PEER the published server is skipped.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import sys
import tempfile
import time

import anyio

from common import REPO, fgraph_executable

sys.path.insert(0, os.path.join(REPO, "tests", "scripts"))
from make_mcp_memory_fixture import VERSION, install  # noqa: E402  (the one home of the pinned install)

KINDS = ("person", "service", "project", "team", "document")
RELATIONS = ("depends-on", "works-with", "reports-to", "located-in")
CITIES = ("Lyon", "Metz", "Oslo", "Porto", "Quito", "Turin", "Kyoto", "Leeds")
STATES = ("green", "amber", "red", "archived")
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]  # 70 syllables, 343,000 code words
QUESTIONS = READS = 100
K = 10
SCHEMA = [{"id": "memory/name", "fgraph/type": "text", "fgraph/unique": True},
          {"id": "memory/type", "fgraph/type": "text"},
          {"id": "memory/observation", "fgraph/type": "text", "fgraph/many": True}]
SCHEMA += [{"id": f"rel/{kind}", "fgraph/type": "ref", "fgraph/many": True} for kind in RELATIONS]


# ------------------------------------------------------------------------------ the workload

def code_word(i: int) -> str:
    """A pronounceable word unique to entity i (three syllables, a permutation of 0..342,999)."""
    n = (i * 7919 + 13) % len(SYLLABLES) ** 3
    return "".join(SYLLABLES[(n // len(SYLLABLES) ** p) % len(SYLLABLES)] for p in range(3))


def entity(i: int) -> dict:
    kind = KINDS[i % len(KINDS)]
    return {"name": f"{kind}-{i}", "entityType": kind,
            "observations": [f"Code word {code_word(i)}; a {kind} based in {CITIES[i % len(CITIES)]}",
                             f"Owned by team {i % 97}, tier {i % 3 + 1}"]}


def relations(lo: int, hi: int, seed: int) -> list:
    rng = random.Random(seed * 1_000_003 + lo)
    return [{"from": entity(i)["name"], "to": entity(rng.randrange(i + 1))["name"],
             "relationType": rng.choice(RELATIONS)} for i in range(lo, hi)]


def observations(lo: int, hi: int) -> list:
    return [{"entityName": entity(i)["name"], "contents": [f"Reviewed in week {i % 52 + 1}: {STATES[i % 4]}"]}
            for i in range(lo, hi)]


# ------------------------------------------------------------------------------ the servers

class MemoryServer:
    key, label = "memory", "MCP memory server (npm)"

    def __init__(self, entry: str):
        self.entry = entry

    def params(self, directory: str):
        from mcp.client.stdio import StdioServerParameters
        env = {"PATH": os.environ.get("PATH", ""), "MEMORY_FILE_PATH": os.path.join(directory, "memory.jsonl")}
        return StdioServerParameters(command="node", args=[self.entry], env=env, cwd=directory)

    def setup(self) -> list:
        return []

    def writes(self, lo: int, hi: int, seed: int) -> list:
        return [("create_entities", {"entities": [entity(i) for i in range(lo, hi)]}),
                ("create_relations", {"relations": relations(lo, hi, seed)}),
                ("add_observations", {"observations": observations(lo, hi)})]

    def recall(self, word: str):
        return "search_nodes", {"query": word}

    def found(self, data: dict) -> list:
        return [e["name"] for e in data["entities"]]

    def read(self, name: str):
        return "open_nodes", {"names": [name]}


class FgraphServer:
    def __init__(self, key: str, label: str, executable: str):
        self.key, self.label, self.executable = key, label, executable

    def params(self, directory: str):
        from mcp.client.stdio import StdioServerParameters
        return StdioServerParameters(command=self.executable, cwd=directory, env=dict(os.environ),
                                     args=["--db", os.path.join(directory, "memory.db"), "mcp", "--write"])

    def setup(self) -> list:
        return [("remember", {"operation_id": "schema", "facts": SCHEMA})]

    def writes(self, lo: int, hi: int, seed: int) -> list:
        entities = [{"id": e["name"], "memory/name": e["name"], "memory/type": e["entityType"],
                     "memory/observation": e["observations"]} for e in map(entity, range(lo, hi))]
        refs = [{"id": r["from"], f"rel/{r['relationType']}": [{"ref": r["to"]}]} for r in relations(lo, hi, seed)]
        more = [{"id": o["entityName"], "memory/observation": o["contents"]} for o in observations(lo, hi)]
        return [("remember", {"operation_id": f"{part}-{lo}", "facts": facts})
                for part, facts in (("entities", entities), ("relations", refs), ("observations", more))]

    def recall(self, word: str):
        return "recall", {"query": word, "k": K}

    def found(self, data: dict) -> list:
        return [h["entity"] for h in data["data"]["hits"]]

    def read(self, name: str):
        return "about", {"entity": name}


# ------------------------------------------------------------------------------ measuring

def tree_peak_rss_mib(root: int) -> float:
    """VmHWM (peak resident set) summed over root's descendants, from /proc."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, list(children.get(root, []))
    while stack:
        pid = stack.pop()
        stack += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
        except OSError:
            continue
    return total / 1024


def directory_bytes(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(directory) for name in names)


def percentile(samples: list, q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else float("nan")


class Failed(Exception):
    pass


async def drive(server, size: int, batch: int, seed: int, directory: str, call_bound: float, out: dict) -> None:
    """The workload through one stdio session; fills ``out`` as it goes (so a stopped run still says how far)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    async def call(session, name: str, arguments: dict) -> tuple:
        start = time.perf_counter()
        with anyio.fail_after(call_bound):
            result = await session.call_tool(name, arguments)
        elapsed = time.perf_counter() - start
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            raise Failed(f"{name} failed: {text[:300]}")
        return elapsed, result.structured_content or {}

    rng = random.Random(seed)
    with open(os.path.join(directory, "..", f"{os.path.basename(directory)}.stderr"), "w") as errlog:
        async with stdio_client(server.params(directory), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for name, arguments in server.setup():
                    await call(session, name, arguments)
                out["phase"], start = "write", time.perf_counter()
                for lo in range(0, size, batch):
                    for name, arguments in server.writes(lo, min(size, lo + batch), seed):
                        out["write_lat"].append((await call(session, name, arguments))[0])
                    out["written"] = min(size, lo + batch)
                out["write_s"] = time.perf_counter() - start
                out["phase"], start = "recall", time.perf_counter()
                for i in rng.sample(range(size), min(QUESTIONS, size)):
                    elapsed, data = await call(session, *server.recall(code_word(i)))
                    out["recall_lat"].append(elapsed)
                    out["found"] += entity(i)["name"] in server.found(data)
                out["recall_s"] = time.perf_counter() - start
                out["phase"] = "read"
                for i in rng.sample(range(size), min(READS, size)):
                    elapsed, data = await call(session, *server.read(entity(i)["name"]))
                    out["read_lat"].append(elapsed)
                out["rss_mib"] = tree_peak_rss_mib(os.getpid())
                out["phase"] = "done"


def measure(server, size: int, args, tmp: str) -> dict:
    directory = os.path.join(tmp, f"{server.key}-{size}")
    os.makedirs(directory)
    out = {"phase": "start", "written": 0, "found": 0, "write_lat": [], "recall_lat": [], "read_lat": []}
    start = time.perf_counter()

    async def bounded():
        with anyio.move_on_after(args.bound):
            await drive(server, size, args.batch, args.seed, directory, args.call_bound, out)

    try:
        anyio.run(bounded)
    except TimeoutError:
        out["error"] = f"one {out['phase']} call took over {args.call_bound:g} s"
    except Failed as e:
        out["error"] = str(e)
    except Exception as e:  # a server that died: report it, go on with the others
        out["error"] = f"{type(e).__name__}: {str(e)[:200]}"
    out["wall_s"] = time.perf_counter() - start
    if out["phase"] != "done" and "error" not in out:
        out["error"] = f"not done in {args.bound:g} s ({out['phase']} phase, {out['written']:,}/{size:,} written)"
    out["file_mib"] = directory_bytes(directory) / 2**20
    if not args.keep:
        shutil.rmtree(directory, ignore_errors=True)
    return out


def ms(samples: list) -> str:
    return f"{percentile(samples, .5) * 1000:.1f} / {percentile(samples, .99) * 1000:.1f}" if samples else "–"


def row(label: str, size: int, r: dict) -> str:
    calls = len(r["write_lat"])
    if "error" in r:
        return (f"| {label} | {size:,} | {r['error']} | {ms(r['write_lat'])} | – | – | – | – | – | "
                f"{r['file_mib']:.1f} | {r['wall_s']:.0f} |")
    return (f"| {label} | {size:,} | {size / r['write_s']:,.0f} ({calls} calls) | {ms(r['write_lat'])} | "
            f"{len(r['recall_lat']) / r['recall_s']:,.0f} | {ms(r['recall_lat'])} | {r['found']}/{len(r['recall_lat'])} "
            f"| {ms(r['read_lat'])} | {r['rss_mib']:.0f} | {r['file_mib']:.1f} | {r['wall_s']:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000], help="entities per run (default 1000)")
    ap.add_argument("--batch", type=int, default=100, help="entities per write call (default 100)")
    ap.add_argument("--bound", type=float, default=900, help="seconds one server may take for one size (default 900)")
    ap.add_argument("--call-bound", type=float, default=120, help="seconds one call may take (default 120)")
    ap.add_argument("--seed", type=int, default=52)
    ap.add_argument("--npm-prefix", default=os.path.join(tempfile.gettempdir(), "fgraph-peers-npm"),
                    help="where the memory server is npm-installed and reused (default $TMPDIR/fgraph-peers-npm)")
    ap.add_argument("--only", nargs="+", choices=["ours", "memory", "published"], help="run only these servers")
    ap.add_argument("--keep", action="store_true", help="keep the stores (their paths are printed)")
    args = ap.parse_args()
    if max(args.sizes) > len(SYLLABLES) ** 3:
        raise SystemExit(f"at most {len(SYLLABLES) ** 3:,} entities: the code words would repeat")

    servers = {"ours": FgraphServer("ours", "fgraph (ours)", fgraph_executable())}
    if shutil.which("node") and shutil.which("npm"):
        from pathlib import Path
        servers["memory"] = MemoryServer(str(install(Path(args.npm_prefix).resolve())))
    else:
        print("node/npm not on PATH: the MCP memory server is skipped", file=sys.stderr)
    peer = os.environ.get("FGRAPH_PEER")
    if peer:
        servers["published"] = FgraphServer("published", "fgraph 1.2 (published)", peer)
    else:
        print("FGRAPH_PEER not set: the published server is skipped", file=sys.stderr)
    chosen = [s for s in servers.values() if not args.only or s.key in args.only]

    print(f"peers: batch {args.batch}, {QUESTIONS} questions, {READS} reads, bound {args.bound:g} s per server "
          f"and size; memory server {VERSION}")
    print("| server | entities | write entities/s | write call p50 / p99 ms | questions/s | recall p50 / p99 ms "
          "| found | read p50 / p99 ms | peak RSS MiB | files MiB | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="fgraph-peers-") as tmp:
        if args.keep:
            tmp = tempfile.mkdtemp(prefix="fgraph-peers-kept-")
            print(f"stores kept in {tmp}", file=sys.stderr)
        for size in args.sizes:
            for server in chosen:
                print(row(server.label, size, measure(server, size, args, tmp)), flush=True)


if __name__ == "__main__":
    main()
