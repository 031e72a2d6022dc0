"""Event streams: tail and apply throughput and peak memory, ours against the published runtime.

Builds a store of N events (3–5 facts each, realistic value mix), then measures in one run,
each command in its own process (peak RSS is that process's):
  tail        `fgraph --db src.db tail`            events/s, peak RSS
  apply       `fgraph --db new.db apply events`    events/s, peak RSS
  re-apply    the same stream again (all already applied)
and, with FGRAPH_PEER set, the peer's tail of the same big store (it reads our file) and
its apply/re-apply on a smaller store, because the published runtime's apply is quadratic
and would take hours at 100,000 events; our rates on that smaller store are measured too,
so the ratios compare like with like.

    .venv/bin/python benchmarks/stream.py [--events 100000] [--peer-events 2000]
"""

from __future__ import annotations

import argparse
import os
import tempfile

from common import build_store, fgraph_executable, rate, run_measured


def measure_tail(exe: str, tmp: str, label: str, source_db: str, env: dict) -> tuple[str, int, dict]:
    stream = os.path.join(tmp, f"{label}.ndjson")
    tail = run_measured([exe, "--db", source_db, "tail", "--since", "64"], stdout=stream, env=env)
    with open(stream, "rb") as handle:
        lines = sum(1 for _ in handle)
    return stream, lines, tail


def measure(exe: str, tmp: str, label: str, source_db: str, events: int, env: dict) -> dict:
    target = os.path.join(tmp, f"{label}-target.db")
    stream, lines, tail = measure_tail(exe, tmp, label, source_db, env)
    assert lines >= events - 1, (lines, events)
    apply = run_measured([exe, "--db", target, "apply", stream], env=env)
    again = run_measured([exe, "--db", target, "apply", stream], env=env)
    return {"events": lines, "tail": (rate(lines, tail["seconds"]), tail["peak_rss_mib"]),
            "apply": (rate(lines, apply["seconds"]), apply["peak_rss_mib"]),
            "reapply": (rate(lines, again["seconds"]), again["peak_rss_mib"])}


def show(label: str, figures: dict) -> None:
    print(f"{label} ({figures['events']} events)")
    for key in ("tail", "apply", "reapply"):
        per_second, rss = figures[key]
        print(f"  {key:8s} {per_second:12.0f} events/s   peak RSS {rss:7.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--peer-events", type=int, default=2_000)
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("FGRAPH_EVENT_SEED", None)
    ours = fgraph_executable()
    peer = os.environ.get("FGRAPH_PEER")
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.db")
        seconds = build_store(big, args.events)
        print(f"built {args.events} events in {seconds:.1f} s (library, synchronous=OFF)")
        ours_big = measure(ours, tmp, "ours-big", big, args.events, env)
        show("ours", ours_big)
        if peer:
            peer_stream, peer_lines, peer_tail = measure_tail(peer, tmp, "peer-big", big, env)
            with open(peer_stream, "rb") as a, open(os.path.join(tmp, "ours-big.ndjson"), "rb") as b:
                identical = a.read() == b.read()
            peer_rate = rate(peer_lines, peer_tail["seconds"])
            print(f"peer tail of the same {peer_lines} events: {peer_rate:.0f} events/s, peak RSS "
                  f"{peer_tail['peak_rss_mib']:.1f} MiB; streams byte-identical: {identical}")
            print(f"ratio ours/peer tail ({peer_lines} events) {ours_big['tail'][0] / peer_rate:8.1f}x   (target >= 4x)")
            small = os.path.join(tmp, "small.db")
            build_store(small, args.peer_events)
            mine = measure(ours, tmp, "ours-small", small, args.peer_events, env)
            theirs = measure(peer, tmp, "peer-small", small, args.peer_events, env)
            show("ours", mine)
            show("peer", theirs)
            for key in ("apply", "reapply"):
                print(f"ratio ours/peer {key:8s} ({args.peer_events} events) {mine[key][0] / theirs[key][0]:8.1f}x"
                      f"   (target apply >= 10x)")


if __name__ == "__main__":
    main()
