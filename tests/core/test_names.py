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


def test_remembered_names_stay_valid_and_the_memory_is_bounded(monkeypatch):
    from fgraph.core import names
    monkeypatch.setattr(names, "KNOWN_NAMES_LIMIT", 4)
    names.KNOWN_NAMES.clear()
    names.KNOWN_ATTRIBUTES.clear()
    for i in range(10):
        assert check_name(f"n{i}") == f"n{i}"
        assert check_attribute_name(f"a/n{i}") == f"a/n{i}"
        assert len(names.KNOWN_NAMES) <= 4 and len(names.KNOWN_ATTRIBUTES) <= 4
    for bad in ("", "tab\there"):          # a refused name is never remembered, so it stays refused
        for _ in range(2):
            with pytest.raises(fgraph.ValueTypeError):
                check_name(bad)
    assert check_name("n9") == "n9"
    with pytest.raises(fgraph.SchemaError):
        check_attribute_name("n9")          # a valid entity name is not thereby a valid attribute name
    with pytest.raises(fgraph.ValueTypeError):
        check_name(["n9"])                  # unhashable input is still refused, not a crash


@pytest.mark.parametrize("name", ["a/b\n", "p/name\n"])
def test_a_trailing_newline_is_not_part_of_a_valid_attribute_name(name):
    """The published runtime refuses these with SchemaError; `$` once let them through."""
    with pytest.raises(fgraph.SchemaError):
        check_attribute_name(name)
