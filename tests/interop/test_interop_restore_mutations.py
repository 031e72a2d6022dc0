"""Restore of mutated snapshots gives the same outcome on both runtimes: the same error name, or both
accept. Mutations (byte flips, lost, repeated and swapped records, truncation, edits of one record,
re-sealed or not) of the published fixture snapshot and of a snapshot of a store with every value
type. Every generated input goes to both runtimes; FGRAPH_QUERIES scales the count."""

from __future__ import annotations

import random

import pytest

from tests.support.paths import UPSTREAM
from tests.support.runtimes import differential_pair
from tests.support.mutations import mutate

FIXTURE = UPSTREAM / "fixtures" / "format-v2.snapshot.ndjson"


@pytest.fixture(scope="module")
def pair():
    ours, peer, total, seed = differential_pair()
    yield ours, peer, total, seed
    ours.close()
    peer.close()


def test_mutated_snapshots_fail_alike(pair, tmp_path):
    if not FIXTURE.exists():
        pytest.fail(f"{FIXTURE} is missing: the cross-runtime restore test needs the upstream fixture")
    ours, peer, total, seed = pair
    source = FIXTURE.read_text(encoding="utf-8")
    rng = random.Random(seed)
    mismatches, outcomes = [], {}
    count = max(60, total // 5)
    for n in range(count):
        data = mutate(source, rng, sealed=rng.random() < 0.5)
        results = []
        for runtime in (ours, peer):
            path = tmp_path / f"{runtime.name}-{n}.db"
            outcome = runtime.run(path, "restore", "-", stdin=data)
            results.append(outcome.error_name or "ok")
        outcomes[results[0]] = outcomes.get(results[0], 0) + 1
        if results[0] != results[1]:
            mismatches.append((n, results, data[:300]))
    print(f"restore mutations: {count} inputs, outcomes {outcomes}, mismatches {len(mismatches)}")
    assert not mismatches, [(n, names) for n, names, _ in mismatches]

