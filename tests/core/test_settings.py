"""Proves issue 28 item 4: every environment variable fgraph reads is in fgraph/core/settings.py,
docs/settings.md shows that table, no other module reads the environment for an FGRAPH_*
variable, and a bad FGRAPH_EMBED_TIMEOUT is refused instead of silently replaced."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import fgraph
from fgraph.bridges.sync import adapters as sync_adapters
from fgraph.core import settings
from fgraph.core.errors import ValueTypeError

PACKAGE = pathlib.Path(fgraph.__file__).parent
DOC = PACKAGE.parent / "docs" / "settings.md"
NAME = re.compile(r"_?FGRAPH_[A-Z][A-Z_]*")
# core's table, then the rows each log adapter of `fgraph sync` declares beside its code
TABLE = settings.SETTINGS + sync_adapters.settings()
NAMES = frozenset(s.name for s in TABLE)


def names_in_code(path: pathlib.Path) -> set[str]:
    """FGRAPH_* names in the string constants of a module (docstrings included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(NAME.findall(node.value))
    return found


def test_every_variable_named_in_the_code_is_a_documented_setting():
    named = set().union(*(names_in_code(p) for p in PACKAGE.rglob("*.py")))
    assert named - NAMES == set()
    assert NAMES - named == set()  # and no setting is listed that nothing uses
    assert len(NAMES) == len(TABLE)  # and none is declared twice


def test_the_docs_table_is_the_settings_table():
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| `")]
    assert rows == [f"| `{s.name}` | {s.default} | {s.meaning} |" for s in TABLE]


def test_only_the_settings_module_reads_the_environment():
    readers = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "get", "getenv") and "environ" in ast.unparse(node.func.value) + ast.unparse(node.func):
                readers.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert readers == []


def test_an_unknown_setting_is_a_bug():
    with pytest.raises(KeyError, match="not a documented setting"):
        settings.read("FGRAPH_NOPE")
    assert settings.read(settings.DB, {"FGRAPH_DB": "x.db"}) == "x.db"


@pytest.mark.parametrize("raw", ["abc", "0", "-1", "inf", "nan"])
def test_a_bad_embed_timeout_is_refused(monkeypatch, raw):
    monkeypatch.setenv("FGRAPH_EMBED_TIMEOUT", raw)
    with pytest.raises(ValueTypeError, match="FGRAPH_EMBED_TIMEOUT"):
        settings.embed_timeout()


def test_the_embed_timeout_defaults_and_parses(monkeypatch):
    monkeypatch.delenv("FGRAPH_EMBED_TIMEOUT", raising=False)
    assert settings.embed_timeout() == settings.EMBED_TIMEOUT_SECONDS
    monkeypatch.setenv("FGRAPH_EMBED_TIMEOUT", "2.5")
    assert settings.embed_timeout() == 2.5
