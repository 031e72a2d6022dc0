"""Event streams: tail and apply throughput and peak memory, ours against the published runtime.

Builds a store of N events (3–5 facts each, realistic value mix), then measures in one run,
each command in its own process (peak RSS is that process's):
  tail        `fgraph --db src.db tail`            events/s, peak RSS
  apply       `fgraph --db new.db apply events`    events/s, peak RSS
  re-apply    the same stream again (all already applied)
and the same three for the peer (FGRAPH_PEER) on a prefix of the stream, because the
published runtime's apply is quadratic and would take hours at 100,000 events; our
rates on that same prefix are measured too, so the ratios compare like with like.

    .venv/bin/python benchmarks/stream.py [--events 100000] [--peer-events 2000]
"""

from __future__ import annotations

import argparse
import os
import tempfile

from common import build_store, fgraph_executable, rate, run_measured


def measure(exe: str, tmp: str, label: str, source_db: str, events: int, env: dict) -> dict:
    stream = os.path.join(tmp, f"{label}.ndjson")
    target = os.path.join(tmp, f"{label}-target.db")
    tail = run_measured([exe, "--db", source_db, "tail", "--since", "64"], stdout=stream, env=env)
    with open(stream, "rb") as handle:
        lines = sum(1 for _ in handle)
    assert lines >= events, (lines, events)
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
        show("ours", measure(ours, tmp, "ours-big", big, args.events, env))
        if peer:
            small = os.path.join(tmp, "small.db")
            build_store(small, args.peer_events)
            mine = measure(ours, tmp, "ours-small", small, args.peer_events, env)
            theirs = measure(peer, tmp, "peer-small", small, args.peer_events, env)
            show("ours", mine)
            show("peer", theirs)
            for key in ("tail", "apply", "reapply"):
                print(f"ratio ours/peer {key:8s} {mine[key][0] / theirs[key][0]:8.1f}x"
                      f"   (targets: apply >= 10x, tail >= 4x)")


if __name__ == "__main__":
    main()
