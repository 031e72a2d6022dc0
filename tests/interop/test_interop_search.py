"""Differential test of search and schema/1 manifests (issue 13 item 5): random stores with text,
vectors, refs and shapes (tests/support/search_grammar.py), random ``search`` requests and random
manifests go to our CLI and to the published runtime's (FGRAPH_PEER) over copies of the same
file; both must print the same result or fail with the same error name. Rejected requests
are compared like accepted ones. Each store also gets one ``schema-check`` (read-only) and one
``schema-apply`` on a copy per runtime, whose reports and following exports must agree.

    FGRAPH_QUERIES (default 300) search requests, FGRAPH_QUERY_SEED (default 12) picks them:
    FGRAPH_PEER=../shared/tools/refpeer FGRAPH_QUERIES=3000 .venv/bin/python -m pytest -q tests/interop/test_interop_search.py
"""

from __future__ import annotations

import collections
import json
import random
import shutil


import fgraph
from tests.support.runtimes import differential_pair
from tests.support.search_grammar import DECLARATIONS, manifest, search_args, store
from tests.support.constants import CONFORMANCE_CLOCK

REQUESTS_PER_STORE = 10


def _features(result: dict) -> set:
    """What an accepted result exercised, to show the random requests reach every rule."""
    found = set()
    if result["truncated"]:
        found.add("truncated")
    if len(result["expanded"]) == 100:
        found.add("100 expanded")
    elif result["expanded"]:
        found.add("expanded")
    for hit in result["hits"]:
        for fact in hit["matched"]:
            found.update(key for key in ("value_truncated", "snippet_truncated") if fact.get(key)
                         and "vector_dims" not in str(fact.get("v")))
            found.add("vector evidence" if "snippet" not in fact else "keyword evidence")
        if len(hit["matched"]) == 2:
            found.add("both lists")
    scores = [hit["score"] for hit in result["hits"]]
    if len(set(scores)) < len(scores):
        found.add("tied scores")
    return found


def build(path, rng) -> None:
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        for attr, options in DECLARATIONS:
            db.declare(attr, **options)
        shaped = rng.random() < 0.3
        if shaped:
            db.declare_shape("shape/doc", required=["doc/kind"], allowed=["doc/title", "doc/tags"],
                             closed=False)
        for data, meta in store(rng):
            if shaped and isinstance(data, list):
                data = [dict(item, **{"fgraph/shape": {"ref": "shape/doc"}})
                        if isinstance(item, dict) and "doc/kind" in item and rng.random() < 0.5 else item
                        for item in data]
            try:
                db.transact(data, tx=meta)
            except fgraph.FgraphError:
                pass  # a retraction of nothing, a shape the change breaks: the history goes on


def test_random_searches_and_manifests_agree_with_the_published_runtime(tmp_path):
    ours, theirs, total, seed = differential_pair()
    mismatches, accepted, sent, manifests = [], 0, 0, 0
    covered: collections.Counter = collections.Counter()
    try:
        for n in range((total + REQUESTS_PER_STORE - 1) // REQUESTS_PER_STORE):
            rng = random.Random(seed * 100_003 + n)
            path = tmp_path / f"s{n}.db"
            build(path, rng)
            for _ in range(REQUESTS_PER_STORE):
                args = ["--json", "search", *search_args(rng)]
                a, b = ours.run(path, *args).parsed(), theirs.run(path, *args).parsed()
                sent += 1
                accepted += a[0] == "ok"
                if a[0] == "ok":
                    covered.update(_features(a[1]))
                if a != b:
                    mismatches.append((f"store {n}: {args}", a, b))
            exported = ours.run(path, "--json", "schema-export").parsed()
            wanted = json.dumps(manifest(rng, exported[1]), ensure_ascii=False)
            a, b = (ours.run(path, "--json", "schema-check", wanted).parsed(),
                    theirs.run(path, "--json", "schema-check", wanted).parsed())
            if a != b:
                mismatches.append((f"store {n}: schema-check {wanted}", a, b))
            copies = []
            for label in ("ours", "peer"):
                copies.append(tmp_path / f"s{n}-{label}.db")
                shutil.copyfile(path, copies[-1])
            runs = []
            for runtime, copy in zip((ours, theirs), copies):
                runs.append((runtime.run(copy, "--json", "schema-apply", wanted, "--operation-id", "m1").parsed(),
                             runtime.run(copy, "--json", "schema-export").parsed()))
            manifests += 1
            if runs[0] != runs[1]:
                mismatches.append((f"store {n}: schema-apply {wanted}", runs[0], runs[1]))
    finally:
        ours.close()
        theirs.close()
    print(f"\nsearches: {sent}, accepted by both: {accepted}, manifests: {manifests}, mismatches: {len(mismatches)}")
    print("results with:", dict(sorted(covered.items())))
    assert sent >= total and accepted >= total // 3
    assert not mismatches, "\n".join(f"{q}\n  ours:   {a}\n  theirs: {b}" for q, a, b in mismatches[:10])
