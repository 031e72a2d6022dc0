"""Differential test of the query surface (issue 12 item 7): random stores and random queries
from tests/support/query_grammar.py go to our CLI and to the published runtime's (FGRAPH_PEER) over the
same file; both must give the same columns, the same rows (as a multiset when unordered) and
the same error names. Each store also gets an explain and a datoms walk that follows its
cursors. Rejected queries are compared like accepted ones.

    FGRAPH_QUERIES (default 300) queries, FGRAPH_QUERY_SEED (default 12) picks them:
    FGRAPH_PEER=../shared/tools/refpeer FGRAPH_QUERIES=3000 .venv/bin/python -m pytest -q tests/interop/test_interop_queries.py
"""

from __future__ import annotations

import json
import random


import fgraph
from tests.support.query_grammar import DECLARATIONS, datoms_call, query, store
from tests.support.runtimes import differential_pair, same_rows
from tests.support.constants import CONFORMANCE_CLOCK

QUERIES_PER_STORE = 10


def build(path, rng) -> None:
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        for attr, options in DECLARATIONS:
            db.declare(attr, **options)
        for tx in store(rng):
            try:
                db.transact(tx)
            except fgraph.FgraphError:
                pass  # a random retraction of nothing, a conflicting ref: the history goes on


def test_random_queries_agree_with_the_published_runtime(tmp_path):
    ours, theirs, total, seed = differential_pair()
    mismatches, accepted, sent = [], 0, 0
    try:
        for n in range((total + QUERIES_PER_STORE - 1) // QUERIES_PER_STORE):
            rng = random.Random(seed * 100_003 + n)
            path = tmp_path / f"s{n}.db"
            build(path, rng)
            for _ in range(QUERIES_PER_STORE):
                q = query(rng)
                text = json.dumps(q, ensure_ascii=False)
                a, b = ours.run(path, "--json", "q", text).parsed(), theirs.run(path, "--json", "q", text).parsed()
                sent += 1
                if a[0] != b[0] or (a[0] == "error" and a[1] != b[1]) or (a[0] == "ok" and not same_rows(q, a[1], b[1])):
                    mismatches.append((text, a, b))
                accepted += a[0] == "ok"
            text = json.dumps(query(rng), ensure_ascii=False)
            a, b = ours.run(path, "--json", "explain", text).parsed(), theirs.run(path, "--json", "explain", text).parsed()
            if a != b:
                mismatches.append(("explain " + text, a, b))
            call = datoms_call(rng)
            args = ["--json", "datoms", call["index"], "--components", json.dumps(call["components"]),
                    "--source", call["source"], "--limit", str(call["limit"])]
            for _ in range(50):
                a, b = ours.run(path, *args).parsed(), theirs.run(path, *args).parsed()
                if a != b:
                    mismatches.append(("datoms " + " ".join(args), a, b))
                    break
                if a[0] != "ok" or not a[1]["next_cursor"]:
                    break
                args = args[:9] + ["--cursor", a[1]["next_cursor"]]
    finally:
        ours.close()
        theirs.close()
    print(f"\nqueries: {sent}, accepted by both: {accepted}, mismatches: {len(mismatches)}")
    assert sent >= total and accepted >= total // 3
    assert not mismatches, "\n".join(f"{q}\n  ours:   {a}\n  theirs: {b}" for q, a, b in mismatches[:10])
