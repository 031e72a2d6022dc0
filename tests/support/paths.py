"""Where the tests find the repository, its docs and their own fixtures and scripts."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
DOCS = REPO / "docs"
FIXTURES = TESTS / "fixtures"
SCRIPTS = TESTS / "scripts"
SHARED = REPO.parent / "shared"
UPSTREAM = SHARED / "fixtures" / "upstream"


def requires_upstream():
    """Skips a test that reads the published runtime's fixtures when ../shared does not hold them."""
    import pytest  # only the tests that read upstream fixtures need the marker
    return pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/fixtures/upstream is not present")
