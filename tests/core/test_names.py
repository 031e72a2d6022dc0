"""Proves the name rules of spec 03 §2: the Cc check equals Unicode's category, byte limits,
and attribute names (one slash, lowercase, the reserved fgraph/ namespace)."""

from __future__ import annotations

import json
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


# -- issue 47 item 7: an over-long name is a typed error that states the limit, everywhere -----------------
LONG = "x" * 50_000


def test_an_over_long_name_or_attribute_is_a_type_error_stating_the_limit():
    for check, name in ((check_name, LONG), (check_attribute_name, "a/" + LONG), (check_attribute_name, "a/" + "b" * 511)):
        with pytest.raises(fgraph.ValueTypeError) as caught:
            check(name)
        assert "no name is longer than 512 UTF-8 bytes" in caught.value.message
        assert "names are 1-512 UTF-8 bytes" in caught.value.hint and len(caught.value.message) < 300
    assert check_attribute_name("a/" + "b" * 510) == "a/" + "b" * 510


def _cli(tmp_path, *args):
    from tests.support.cli import run_cli
    return run_cli("--db", str(tmp_path / "n.db"), *args, cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("argv, error", [
    (("get", LONG), "NotFound"), (("history", LONG), "NotFound"), (("why", LONG), "NotFound"),
    (("excise", LONG, "--operation-id", "o", "--if-basis-tx", "LATEST"), "NotFound"),
    (("add", '{"id":"%s","p/n":1}' % LONG), "TypeError"), (("add", '{"id":"ada","a/%s":1}' % LONG), "TypeError"),
    (("declare", "a/" + LONG, "--type", "int"), "TypeError")])
def test_the_cli_answers_an_over_long_name_with_a_typed_error(tmp_path, argv, error):
    """Before: `get`, `history`, `why` were an internal error (SQLite: "LIKE or GLOB pattern too complex")
    and `add` stored a 50,000-byte attribute name."""
    assert _cli(tmp_path, "add", '{"id":"ada","p/n":1}')[0] == 0
    latest = str(json.loads(_cli(tmp_path, "--json", "info")[1])["latest_tx"])
    code, out, err = _cli(tmp_path, *(latest if arg == "LATEST" else arg for arg in argv))
    assert code == 1 and out == "" and err.startswith(error + ":"), (argv, err[:300])
    assert "no name is longer than 512 UTF-8 bytes" in err and len(err) < 600, err[:300]
    assert "internal error" not in err and "Traceback" not in err


def test_a_query_naming_an_over_long_name_answers_no_rows(tmp_path):
    """As for any unknown name (the published behaviour): a question, not a lookup."""
    assert _cli(tmp_path, "add", '{"id":"ada","p/n":1}')[0] == 0
    for q in ('{"find":["?v"],"where":[["%s","p/n","?v"]]}' % LONG, '{"find":["?v"],"where":[["?e","a/%s","?v"]]}' % LONG,
              '{"find":["?e"],"where":[["?e","p/n","%s"]]}' % LONG):
        code, out, err = _cli(tmp_path, "--json", "q", q)
        assert code == 0 and '"rows":[]' in out, err[:300]
