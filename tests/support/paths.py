"""Where the tests find the repository, its docs and their own fixtures and scripts."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
DOCS = REPO / "docs"
FIXTURES = TESTS / "fixtures"
SCRIPTS = TESTS / "scripts"
