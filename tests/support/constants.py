"""Constants every test shares: the clock and event seed of spec 11 §2.3 (2026-01-01T00:00:00Z)."""

from __future__ import annotations

CONFORMANCE_CLOCK = 1767225600000000
CONFORMANCE_SEED = "fgraph-conformance-v2"
