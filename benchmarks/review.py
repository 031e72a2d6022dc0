"""Reviewed streams (issue 35): review and render against `apply --dry-run`, and the cost of
`apply --expect-digest` over a plain apply.

Builds a store of N events (benchmarks/common.py), tails it to a stream, then times, each
command in its own process (peak RSS is that process's), against an empty receiver:
  dry-run     `fgraph --db rx.db apply --dry-run s.ndjson`
  review      `fgraph --db rx.db review s.ndjson`             (Markdown)
  review-json `fgraph --db rx.db review s.ndjson --json`
  render      `fgraph render s.ndjson`
  digest      `fgraph review --digest s.ndjson`
  apply       `fgraph --db copy.db apply s.ndjson`            (best of --runs, each on a fresh copy)
  apply+dig   `fgraph --db copy.db apply s.ndjson --expect-digest D`
and prints the figures and the ratios the issue sets: review and render at least as fast as the
dry run (ratio of times <= 1.0), the digest's overhead on apply <= 5 %.

    .venv/bin/python benchmarks/review.py [--events 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile

from common import build_store, fgraph_executable, rate, run_measured


def timed(argv: list, env: dict, runs: int = 1, before=None) -> dict:
    """The fastest of ``runs`` runs (``before`` prepares each one)."""
    best = None
    for _ in range(runs):
        if before is not None:
            before()
        result = run_measured(argv, env=env)
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each apply (the fastest is kept)")
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("FGRAPH_EVENT_SEED", None)
    exe = fgraph_executable()
    with tempfile.TemporaryDirectory() as tmp:
        source, stream = os.path.join(tmp, "src.db"), os.path.join(tmp, "s.ndjson")
        seconds = build_store(source, args.events)
        print(f"built {args.events} events in {seconds:.1f} s (library, synchronous=OFF)")
        run_measured([exe, "--db", source, "tail", "--since", "64"], stdout=stream, env=env)
        with open(stream, "rb") as handle:
            events = sum(1 for _ in handle)
        receiver, copy = os.path.join(tmp, "rx.db"), os.path.join(tmp, "copy.db")
        subprocess.run([exe, "--db", receiver, "init"], env=env, check=True, capture_output=True)
        digest = subprocess.run([exe, "review", "--digest", stream], env=env, check=True,
                                capture_output=True, text=True).stdout.strip()

        def fresh_copy() -> None:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(copy + suffix):
                    os.remove(copy + suffix)
            shutil.copyfile(receiver, copy)

        figures = {
            "dry-run": timed([exe, "--db", receiver, "apply", "--dry-run", stream], env),
            "review": timed([exe, "--db", receiver, "review", stream], env),
            "review-json": timed([exe, "--db", receiver, "review", stream, "--json"], env),
            "render": timed([exe, "render", stream], env),
            "digest": timed([exe, "review", "--digest", stream], env),
            "apply": timed([exe, "--db", copy, "apply", stream], env, args.runs, fresh_copy),
            "apply+dig": timed([exe, "--db", copy, "apply", stream, "--expect-digest", digest], env, args.runs,
                               fresh_copy),
        }
        print(f"{events} events, {os.path.getsize(stream) / 1048576:.1f} MiB, {digest}")
        for name, result in figures.items():
            print(f"  {name:12s} {result['seconds']:8.2f} s {rate(events, result['seconds']):10.0f} events/s"
                  f"   peak RSS {result['peak_rss_mib']:7.1f} MiB")
        dry = figures["dry-run"]["seconds"]
        for name in ("review", "review-json", "render"):
            print(f"ratio {name}/dry-run time   {figures[name]['seconds'] / dry:6.2f}   (target <= 1.00)")
        overhead = figures["apply+dig"]["seconds"] / figures["apply"]["seconds"] - 1
        print(f"digest overhead on apply     {overhead * 100:+6.1f} %   (target <= 5 %)")


if __name__ == "__main__":
    main()
