"""Proves the name rules of spec 03 §2: the Cc check equals Unicode's category, byte limits,
and attribute names (one slash, lowercase, the reserved fgraph/ namespace)."""

from __future__ import annotations

import unicodedata

import pytest

import fgraph
from fgraph.core.names import CONTROL_RE, check_attribute_name, check_name


def test_control_regex_is_exactly_unicode_cc():
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        assert (unicodedata.category(chr(code)) == "Cc") == bool(CONTROL_RE.match(chr(code))), hex(code)


@pytest.mark.parametrize("name", ["Ada Lovelace Ünïcode", "article/one", "blob/entity/item", "x" * 512, "é" * 256])
def test_valid_names(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "x" * 513, "é" * 257, "tab\there", "nel\u0085", "del\x7f", "\ud800"])
def test_invalid_names(name):
    with pytest.raises(fgraph.ValueTypeError):
        check_name(name)


@pytest.mark.parametrize("name", ["bad", "noslash", "Bad/Attr", "id2", "a/b/c", "/x", "x/", "fgraph/other"])
def test_invalid_attribute_names(name):
    with pytest.raises(fgraph.SchemaError):
        check_attribute_name(name)
