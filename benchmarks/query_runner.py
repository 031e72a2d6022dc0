"""Run one benchmark query in this interpreter's fgraph (ours, or the published runtime's under
``refpeer --python``) and print its best time, row count and this process's peak RSS as JSON.

    python query_runner.py DB KIND SPEC_JSON REPEAT

KIND is ``q`` (SPEC is a query), ``walk`` (SPEC is ``{index, components, pages, limit}``: a
datoms page walk following cursors), ``pull`` (SPEC is ``[ref, pattern]``) or ``search`` (SPEC
is the keyword arguments of ``search``; the row count is hits + expanded). Imports nothing
from this repository, so the published runtime runs as itself.
"""

from __future__ import annotations

import json
import resource
import sys
import time

import fgraph


def once(db, kind: str, spec) -> int:
    if kind == "q":
        return len(db.q(spec)["rows"])
    if kind == "pull":
        return len(db.pull(spec[0], spec[1]))
    if kind == "search":
        result = db.search(**spec)
        return len(result["hits"]) + len(result["expanded"])
    items, cursor = 0, None
    for _ in range(spec["pages"]):
        page = db.datoms(spec["index"], spec["components"], limit=spec["limit"], cursor=cursor)
        items += len(page["items"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    return items


def main() -> None:
    path, kind, spec, repeat = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    db = fgraph.connect(path, read_only=True, query_budget=10 ** 9)
    best, rows = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = once(db, kind, spec)
        best = min(best, time.perf_counter() - start)
    db.close()
    print(json.dumps({"seconds": best, "rows": rows,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main()
