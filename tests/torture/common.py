"""Moved to tests/support/torture.py; this name stays only until tests/torture/test_forget_travel.py
imports from there (issue 46 item 4), then goes."""

from tests.support.torture import report, rng, size  # noqa: F401
