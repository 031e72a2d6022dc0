"""Proves core/limits.py is the single statement of the contract's numbers: the values the spec
gives, and no other module restating them."""

from __future__ import annotations

import pathlib
import re

import fgraph
from fgraph.core import limits

PACKAGE = pathlib.Path(fgraph.__file__).parent


def test_values_are_the_contracts():
    assert limits.MAX_EVENT_BYTES == 8_454_144          # README decision 4
    assert limits.APPLICATION_ID == 1718055521 and limits.USER_VERSION == 2
    assert (limits.INT64_MIN, limits.INT64_MAX) == (-(2**63), 2**63 - 1)
    assert limits.GENESIS_TX == 64 and limits.FIRST_APP_ID == 65
    assert limits.UUID_RE.match("f4ffaa94-9587-4521-9b9f-8915cc70ae3b")
    assert not limits.UUID_RE.match("F4FFAA94-9587-4521-9B9F-8915CC70AE3B")


def test_is_subsequence():
    assert limits.is_subsequence([1, 3], [1, 2, 3])
    assert not limits.is_subsequence([3, 1], [1, 2, 3])
    assert not limits.is_subsequence([1], None)


def test_no_module_restates_a_limit():
    pattern = re.compile(r"^(MAX_EVENT_BYTES|APPLICATION_ID|INT64_MIN|INT64_MAX|INSTANT_MIN|INSTANT_MAX|EVENT_KEYS|"
                         r"UUID_RE|_UUID_RE|MEMORY)\s*=", re.M)
    restating = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                       if p.name != "limits.py" and pattern.search(p.read_text()))
    assert restating == []


def test_patterns_do_not_accept_a_trailing_newline():
    """`$` matches before a final newline; every whole-string pattern of the package ends with \\Z."""
    import re as _re
    assert not limits.UUID_RE.match("f4ffaa94-9587-4521-9b9f-8915cc70ae3b\n")
    loose = sorted(f"{p.relative_to(PACKAGE)}: {m}" for p in PACKAGE.rglob("*.py")
                   for m in _re.findall(r're\.compile\(r?"[^"]*\$"\)', p.read_text()))
    assert loose == []
