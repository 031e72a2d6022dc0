"""Fixtures of the ops tests, which pytest hands over by name."""

from __future__ import annotations

import pytest

from tests.support.damage import build


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The doctor tests' template store (tests/support/damage.py), built once per module; tests damage copies."""
    path = str(tmp_path_factory.mktemp("doctor") / "template.db")
    with pytest.MonkeyPatch.context() as mp:
        build(path, mp)
    return path
