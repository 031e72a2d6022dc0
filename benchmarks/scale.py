"""Scale: the everyday calls on stores of 10,000, 100,000 and 1,000,000 transactions (issue 34
item 4), the median wall time of --runs runs of each (every CLI call its own process, as a user
runs it; MCP calls three of each tool per run in a fresh ``fgraph mcp`` stdio session, timed
from request to answer)
and its peak RSS, then each call's time at the larger sizes as a ratio of its 10,000-store time.

    .venv/bin/python benchmarks/scale.py [--sizes 10000 100000 1000000] [--runs 5] [--cache DIR]

The stores (people, notes with Zipf-distributed words, refs, a 64-dim embedding on every eighth
note) are built with the library under ``PRAGMA synchronous=OFF`` (setup only) and kept under
--cache (default ``$TMPDIR/fgraph-scale``), so a rerun only measures; ``add`` writes one small
transaction per run into the cached store, which leaves the other calls' figures unchanged.
Targets: every call at 1,000,000 within 1.5x of its 10,000-store time, search within 2x, peak
RSS flat.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

import anyio

from common import fgraph, fgraph_executable, run_measured

DIMS = 64
WORDS = [f"w{i}" for i in range(2000)]
WEIGHTS = [1 / (i + 1) for i in range(len(WORDS))]
VECTOR_EVERY = 8  # one note in eight has an embedding
CALLS_PER_SESSION = 3  # MCP calls are a few ms: the median of more samples is steadier
VERSION = 1  # bump when the generator changes, so cached stores are rebuilt


def query_vector(seed: int) -> list:
    rng = random.Random(seed)
    return [round(rng.gauss(0, 1), 4) for _ in range(DIMS)]


def people_count(size: int) -> int:
    return max(100, size // 10)


def records(size: int, seed: int = 13):
    """``size - 1`` transactions (genesis is the first): the people first, one per
    transaction, then notes (70 %) and person updates (30 %). A note has 6–20 words, a kind, an
    author ref, sometimes refs to earlier notes and, one in eight, an embedding; an update
    changes a person's age or score, or adds a ``person/knows`` ref."""
    rng = random.Random(seed)
    people = people_count(size)
    notes = 0
    for i in range(size - 1):
        if i < people:
            yield {"id": f"person-{i}", "person/name": f"Person {i}", "person/handle": f"h{i}",
                   "person/age": rng.randrange(100), "person/status": "vip" if rng.random() < 0.01 else "member"}
            continue
        if rng.random() < 0.3:
            person = {"id": f"person-{rng.randrange(people)}"}
            roll = rng.random()
            if roll < 0.4:
                person["person/age"] = rng.randrange(100)
            elif roll < 0.7:
                person["person/score"] = rng.random() * 1000
            else:
                person["person/knows"] = {"ref": f"person-{rng.randrange(people)}"}
            yield person
            continue
        note = {"id": f"note-{notes}", "note/text": " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(6, 20))),
                "note/kind": f"k{rng.randrange(8)}", "note/author": {"ref": f"person-{rng.randrange(people)}"}}
        if notes and rng.random() < 0.3:
            note["note/related"] = [{"ref": f"note-{rng.randrange(notes)}"} for _ in range(rng.randint(1, 2))]
        if notes % VECTOR_EVERY == 0:
            note["note/embedding"] = {"vector": [round(rng.gauss(0, 1), 4) for _ in range(DIMS)]}
        notes += 1
        yield note


def build(path: str, size: int) -> float:
    """The store, written to ``path.partial`` and renamed when complete; returns seconds."""
    partial = path + ".partial"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(partial + suffix):
            os.remove(partial + suffix)
    start = time.perf_counter()
    with fgraph.connect(partial) as db:
        db.connection.execute("PRAGMA synchronous = OFF")
        db.declare("note/embedding", type="vector", dims=DIMS)
        db.declare("note/related", ref=True, many=True)
        db.declare("note/author", ref=True)
        db.declare("person/knows", ref=True)
        last = start
        for n, record in enumerate(records(size - 5), 1):
            db.transact(record)
            if n % 50_000 == 0 and time.perf_counter() - last > 30:
                last = time.perf_counter()
                print(f"  ... {n:,} of {size:,} in {last - start:.0f} s ({n / (last - start):,.0f} tx/s)",
                      file=sys.stderr, flush=True)
        db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.rename(partial, path)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(partial + suffix):
            os.remove(partial + suffix)
    return time.perf_counter() - start


def store(cache: str, size: int) -> str:
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"scale-v{VERSION}-{size}.db")
    if not os.path.exists(path):
        seconds = build(path, size)
        print(f"built {size:,} transactions in {seconds:.0f} s ({size / seconds:,.0f} tx/s), "
              f"{os.path.getsize(path) / 2 ** 20:,.0f} MiB: {path}", flush=True)
    return path


def tenth_last_tx(path: str) -> int:
    """The transaction before the last ten, so ``tail --since`` it prints ten events."""
    with fgraph.connect(path, read_only=True) as db:
        rows = db.connection.execute("SELECT tx FROM fgraph_events ORDER BY tx DESC LIMIT 11").fetchall()
    return rows[-1][0]


# The same hybrid search with the optional vector index (docs/search.md V1): at 10,000 transactions
# the store has too few vectors for one, so the exact list answers there.
INDEXED_HYBRID = "search hybrid, FGRAPH_VECTOR_INDEX=1"


def cli_calls(size: int, run: int, since: int) -> list:
    """(name, argv after ``--db PATH``) of every CLI call; ids chosen to exist at every size."""
    people = people_count(size)
    person = f"person-{(people * 7) // 10}"
    return [
        ("add", ["add", json.dumps({"id": f"probe-{run}-{time.time_ns()}", "probe/n": run, "probe/text": "a probe"})]),
        ("get", ["get", person]),
        ("q point lookup", ["q", json.dumps({"find": ["?a"], "where": [[person, "person/age", "?a"]]})]),
        ("q two-attribute join", ["q", json.dumps({"find": ["?n"], "where": [["?p", "person/handle", f"h{people // 3}"],
                                                                             ["?n", "note/author", "?p"]]})]),
        ("search rare word", ["search", "--text", "w1500"]),
        ("search common word", ["search", "--text", "w3"]),
        ("search hybrid", ["search", "--text", "w5 w40", "--vector", json.dumps(query_vector(2)),
                           "--vector-attribute", "note/embedding"]),
        (INDEXED_HYBRID, ["search", "--text", "w5 w40", "--vector", json.dumps(query_vector(2)),
                          "--vector-attribute", "note/embedding"]),
        ("context", ["context", "--by", "change"]),   # the change view; the default is --by entity (C4)
        ("context --by entity", ["context", "--by", "entity"]),
        ("info", ["info"]),
        ("tail --since last 10", ["tail", "--since", str(since)]),
    ]


def mcp_once(path: str, size: int) -> dict:
    """One fresh ``fgraph mcp`` session: the seconds of each of CALLS_PER_SESSION ``about`` calls,
    then as many ``recall`` calls (request to answer; the first of each is the cold one), and the
    server's peak RSS (VmHWM) when all are done."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=fgraph_executable(), args=["--db", path, "mcp"], env=dict(os.environ))
    person = f"person-{(people_count(size) * 7) // 10}"

    async def main():
        out = {}
        with open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for name, tool, arguments in (("MCP about", "about", {"entity": person}),
                                                  ("MCP recall", "recall", {"query": "w5 w40", "k": 10})):
                        out[name] = []
                        for _ in range(CALLS_PER_SESSION):
                            start = time.perf_counter()
                            result = await session.call_tool(tool, arguments)
                            out[name].append(time.perf_counter() - start)
                            if result.is_error:
                                raise RuntimeError(f"{tool} failed: {result.content}")
                    out["rss"] = server_peak_rss(path)
        return out
    return anyio.run(main)


def server_peak_rss(path: str) -> float:
    """VmHWM (MiB) of the ``fgraph ... mcp`` child of this process serving ``path``."""
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if ppid != me or path.encode() not in argv:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            continue
    return float("nan")


def measure(paths: dict, runs: int) -> dict:
    """{size: {call: (median seconds, max peak RSS MiB)}} over ``runs`` rounds; each round runs
    every call on every size in turn, so the machine's load of the moment hits all sizes alike."""
    exe = fgraph_executable()
    times, peaks = {}, {}
    since = {size: tenth_last_tx(path) for size, path in paths.items()}
    for run in range(runs):
        for size, path in paths.items():
            t, p = times.setdefault(size, {}), peaks.setdefault(size, {})
            for name, argv in cli_calls(size, run, since[size]):
                env = {**os.environ, "FGRAPH_VECTOR_INDEX": "1"} if name == INDEXED_HYBRID else None
                result = run_measured([exe, "--db", path, *argv], env=env)
                t.setdefault(name, []).append(result["seconds"])
                p[name] = max(p.get(name, 0), result["peak_rss_mib"])
            session = mcp_once(path, size)
            for name in ("MCP about", "MCP recall"):
                t.setdefault(name, []).extend(session[name])
                p[name] = max(p.get(name, 0), session["rss"])
    return {size: {name: (statistics.median(values), peaks[size][name]) for name, values in calls.items()}
            for size, calls in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fgraph-scale"))
    args = parser.parse_args()
    results = measure({size: store(args.cache, size) for size in args.sizes}, args.runs)
    sizes = args.sizes
    base = sizes[0]
    print(f"\nmedian of {args.runs} rounds (MCP: {CALLS_PER_SESSION} calls a round), ms (peak RSS MiB); ratio = time / time at {base:,}")
    header = "| call | " + " | ".join(f"{s:,} ms (MiB)" for s in sizes)
    header += "".join(f" | ×{s:,}/{base:,}" for s in sizes[1:]) + " | target |"
    print(header)
    print("|---|" + "---:|" * (len(sizes) + len(sizes) - 1) + "---|")
    for name in results[base]:
        line = f"| {name} | " + " | ".join(f"{results[s][name][0] * 1000:,.1f} ({results[s][name][1]:.0f})"
                                           for s in sizes)
        limit = 2.0 if "search" in name or "recall" in name else 1.5
        for s in sizes[1:]:
            ratio = results[s][name][0] / results[base][name][0]
            line += f" | {ratio:.2f}{'' if ratio <= limit else ' ✗'}"
        print(line + f" | ≤ {limit}× |")


if __name__ == "__main__":
    main()
