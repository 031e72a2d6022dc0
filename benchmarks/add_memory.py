"""Peak memory of ``fgraph add`` of NDJSON against the number of lines (issue 31 item 3).

Each size is a fresh store and one ``fgraph add @file`` (stdout to /dev/null), measured by its
parent's ``RUSAGE_CHILDREN``: the default (the summary, decision A3 in docs/cli.md) and
``--reports`` (every report, the published output, spooled to a temporary file past 1 MiB). Flat
means the peak at the largest size is within a few MiB of the smallest's.

    .venv/bin/python benchmarks/add_memory.py [--lines 2000 20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import write_lines, fgraph_executable, rate, run_measured  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[2000, 20000])
    args = parser.parse_args()
    env = dict(os.environ, FGRAPH_CLOCK="1767225600000000", FGRAPH_EVENT_SEED="add-memory")
    rows = []
    with tempfile.TemporaryDirectory(prefix="fgraph-add-memory-") as tmp:
        for count in args.lines:
            data = os.path.join(tmp, f"{count}.ndjson")
            write_lines(data, count)
            for flags in ([], ["--reports"]):
                db = os.path.join(tmp, f"{count}{''.join(flags)}.db")
                measured = run_measured([fgraph_executable(), "--db", db, "add", *flags, f"@{data}"], env=env)
                rows.append((count, " ".join(flags) or "(summary)", measured["peak_rss_mib"],
                             rate(count, measured["seconds"])))
    print("| lines | output | peak RSS | records/s |")
    print("|---:|---|---:|---:|")
    for count, output, peak, speed in rows:
        print(f"| {count:,} | {output} | {peak:.1f} MiB | {speed:,.0f} |")


if __name__ == "__main__":
    main()
