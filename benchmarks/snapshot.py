"""snapshot and restore throughput (MB/s) and peak memory, ours against the published runtime.

Builds a store of N events, then, each command in its own process:
  snapshot   `fgraph --db src.db snapshot > s.ndjson`     MB/s of output, peak RSS
  restore    `fgraph --db new.db restore s.ndjson`         MB/s of input, peak RSS
and with FGRAPH_PEER set: the peer's snapshot of the same big store (it reads our file;
the bytes are compared), and snapshot/restore of both runtimes on a smaller store,
because the published restore slows down sharply with size; the ratios compare the
same sizes.

    .venv/bin/python benchmarks/snapshot.py [--events 100000] [--peer-events 5000]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import tempfile

from common import build_store, fgraph_executable, run_measured


def measure(exe: str, tmp: str, label: str, source_db: str, env: dict, restore: bool = True) -> dict:
    out = os.path.join(tmp, f"{label}.snapshot")
    snap = run_measured([exe, "--db", source_db, "snapshot"], stdout=out, env=env)
    size_mb = os.path.getsize(out) / 1e6
    result = {"file": out, "mb": size_mb, "snapshot": (size_mb / snap["seconds"], snap["peak_rss_mib"])}
    if restore:
        target = os.path.join(tmp, f"{label}-restored.db")
        rest = run_measured([exe, "--db", target, "restore", out], env=env)
        result["restore"] = (size_mb / rest["seconds"], rest["peak_rss_mib"])
        again = os.path.join(tmp, f"{label}-again.snapshot")
        run_measured([exe, "--db", target, "snapshot"], stdout=again, env=env)
        result["round_trip_identical"] = filecmp.cmp(out, again, shallow=False)
    return result


def show(label: str, r: dict) -> None:
    print(f"{label}: snapshot {r['mb']:.1f} MB")
    for key in ("snapshot", "restore"):
        if key in r:
            print(f"  {key:8s} {r[key][0]:8.1f} MB/s   peak RSS {r[key][1]:7.1f} MiB")
    if "round_trip_identical" in r:
        print(f"  snapshot -> restore -> snapshot byte-identical: {r['round_trip_identical']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--peer-events", type=int, default=5_000)
    args = parser.parse_args()
    env = dict(os.environ)
    ours, peer = fgraph_executable(), os.environ.get("FGRAPH_PEER")
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.db")
        build_store(big, args.events)
        mine = measure(ours, tmp, "ours-big", big, env)
        show(f"ours ({args.events} events)", mine)
        if peer:
            theirs = measure(peer, tmp, "peer-big", big, env, restore=False)
            print(f"peer snapshot of the same store: {theirs['snapshot'][0]:.1f} MB/s, peak RSS "
                  f"{theirs['snapshot'][1]:.1f} MiB; bytes identical: {filecmp.cmp(mine['file'], theirs['file'], False)}")
            print(f"ratio ours/peer snapshot ({args.events} events): {mine['snapshot'][0] / theirs['snapshot'][0]:.1f}x"
                  "   (target >= 3x)")
            small = os.path.join(tmp, "small.db")
            build_store(small, args.peer_events)
            a = measure(ours, tmp, "ours-small", small, env)
            b = measure(peer, tmp, "peer-small", small, env)
            show(f"ours ({args.peer_events} events)", a)
            show(f"peer ({args.peer_events} events)", b)
            print(f"ratio ours/peer restore ({args.peer_events} events): {a['restore'][0] / b['restore'][0]:.1f}x"
                  "   (target >= 5x)")


if __name__ == "__main__":
    main()
