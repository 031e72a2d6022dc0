"""Proves core/limits.py is the single statement of the contract's numbers: the values the spec
gives, and no other module restating them."""

from __future__ import annotations

import ast
import pathlib
import re
import sys

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


# ---- issue 46 item 5: each option's default and bound stated once, wherever it is used

def _module_level_names(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """(name, assigned value) of every module-level assignment, tuple targets unpacked."""
    out = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None else []
        for target in targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                out += [(t.id, v) for t, v in zip(target.elts, node.value.elts) if isinstance(t, ast.Name)]
            else:
                out += [(n.id, node.value) for n in ast.walk(target) if isinstance(n, ast.Name)]
    return out


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "limits.py" or path.parent.name != "core":
            yield str(path.relative_to(PACKAGE)), ast.parse(path.read_text())


LIMIT_NAMES = {name for name, _ in _module_level_names(ast.parse((PACKAGE / "core" / "limits.py").read_text()))
               if name.isupper()}


def test_no_module_defines_a_name_limits_defines():
    """``MAX_BATCH_SIZE = 10000`` in ingest, ``APPLICATION_ID, FORMAT_VERSION = 1718055521, 2`` in stats."""
    found = sorted(f"{name}: {target}" for name, tree in _modules() for target, _ in _module_level_names(tree)
                   if target in LIMIT_NAMES)
    assert found == []


# The numbers of the options (the context budget, the batch cap, the largest page and window): a
# literal one of these as a default, a click range bound or a module constant is a restatement.
OPTION_NUMBERS = {limits.CONTEXT_BUDGET, limits.CONTEXT_MAX_BUDGET, limits.CONTEXT_MAX_LIMIT, limits.MAX_BATCH_SIZE,
                  limits.DATOMS_MAX_LIMIT}
# Module constants that happen to share a value and mean something else.
SAME_NUMBER_OTHER_MEANING = {
    "bridges/browse/app.py:LABEL_CACHE_LIMIT": "identities whose labels a browse process remembers",
    "bridges/sync/forgetting.py:MAX_WALK": "redacted predecessors followed back from one record",
    "streams/review.py:NAME_MEMORY": "names a review remembers",
    "query/search/entities.py:ROWS_PER_WORD": "rows read per search word",
    "bridges/importers/mirror.py:CHUNK_ITEMS": "retractions per event of a mirror import",
    "bridges/sync/adapters/nats_subjects.py:MAX_SCAN": "messages of one subject read stepping over foreign ones",
    "bridges/sync/quarantine.py:MAX_ENTRIES": "entries a receiver's sync quarantine holds",
}


def _literal_int(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def option_number_restatements() -> list[str]:
    found = []
    for name, tree in _modules():
        for target, value in _module_level_names(tree):
            if _literal_int(value) in OPTION_NUMBERS:
                found.append(f"{name}:{target}")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                defaults = node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
                if any(_literal_int(d) in OPTION_NUMBERS for d in defaults):
                    found.append(f"{name}:{getattr(node, 'name', 'lambda')}")
            elif isinstance(node, ast.Call):
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                bounds = node.args if callee.endswith("Range") else []
                given = [k.value for k in node.keywords if k.arg in ("default", "min", "max")]
                if any(_literal_int(v) in OPTION_NUMBERS for v in [*bounds, *given]):
                    found.append(f"{name}:{callee}({node.lineno})")
    return sorted(f for f in found if f not in SAME_NUMBER_OTHER_MEANING)


def test_option_numbers_come_from_limits():
    assert option_number_restatements() == []


def test_the_check_sees_each_kind_of_restatement(monkeypatch):
    for source in ("MAX = 10_000\n", "A, B = 500, 10_000\n", "def f(budget=3000):\n    pass\n",
                   "def f(*, limit=10000):\n    pass\n", "click.IntRange(1, 10000)\n", "option(default=3000)\n"):
        monkeypatch.setattr(sys.modules[__name__], "_modules", lambda source=source: [("m.py", ast.parse(source))])
        assert option_number_restatements(), source
    monkeypatch.setattr(sys.modules[__name__], "_modules", lambda: [("m.py", ast.parse("def f(budget=CONTEXT_BUDGET):\n    pass\n"))])
    assert option_number_restatements() == []


# A range written out in a face's help ("Characters at most (100-100000).") is formatted from limits.
RANGE_IN_WORDS = re.compile(r"\(\d+-\d+\)|\b\d+\.\.\d+\b")


def test_help_texts_format_their_ranges_from_limits():
    found = sorted(f"{name}: {node.value!r}" for name, tree in _modules() if name.startswith("cli/")
                   for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and RANGE_IN_WORDS.search(node.value))
    assert found == []
    assert RANGE_IN_WORDS.search("Characters at most (100-100000).") and RANGE_IN_WORDS.search("use 1..10000")


# The MCP wing's page sizes and caps (spec 10 §3.4, §6) are limits' MCP_* names; a number an mcp
# module keeps as its own constant is not a bound of what a call may ask for or an answer may hold.
MCP_OWN_NUMBERS = {
    "mcp/wire.py:_SKIP_CHUNK": "bytes read at a time while an overlong line is skipped",
}


def test_the_mcp_numbers_come_from_limits():
    found = sorted(f"{name}:{target}" for name, tree in _modules() if name.startswith("mcp/")
                   for target, value in _module_level_names(tree) if _literal_int(value) is not None)
    assert [f for f in found if f not in MCP_OWN_NUMBERS] == []
    assert sorted(set(MCP_OWN_NUMBERS) - set(found)) == []
    assert limits.MCP_RESPONSE_BYTES == 262_144 and limits.MCP_PAGE_LIMIT == 100
