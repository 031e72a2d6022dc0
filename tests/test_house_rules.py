"""Proves the house rules the linters cannot see (issue 46 item 4), by reading the source (ast), never
importing it:

- a name another module uses is public: no module of fgraph (nor a test) imports a ``_private`` name
  from another fgraph module or reads one as ``module._name``;
- what tests share lives in tests/support: no module under tests/ imports from a test module;
- conftest.py holds fixtures, which pytest hands over by name: nothing imports from it;
- the CLI is run through tests/support/cli.py: no test module outside tests/support defines its own
  helper that runs the fgraph executable with ``subprocess.run`` or click's ``CliRunner``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import REPO, TESTS

PACKAGE = REPO / "fgraph"
SUPPORT = TESTS / "support"
# The first word of a command that is the fgraph executable: the test modules' names for it.
FGRAPH_COMMAND = re.compile(r"^(str\()?(FGRAPH|OURS|CLI|\*CLI|fgraph|executable)\)?$|['\"]fgraph['\"]\)?$")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_module(node: ast.ImportFrom, path: Path) -> str:
    """The absolute name of the module an ``from X import ...`` reads (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module_name(path).split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def is_module(name: str) -> bool:
    where = REPO.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def sources(*roots: Path) -> list[Path]:
    return sorted(path for root in roots for path in root.rglob("*.py"))


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{node.lineno}"


def private_uses(path: Path, text: str | None = None) -> list[str]:
    """``from fgraph.x import _name`` and ``x._name`` (x an fgraph module) in ``path`` (or ``text`` as if it
    were there), x not ``path`` itself."""
    this, tree, found = module_name(path), ast.parse(path.read_text() if text is None else text), []
    modules: dict[str, str] = {}   # local name -> the fgraph module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = imported_module(node, path)
            if source.split(".")[0] != "fgraph":
                continue
            for alias in node.names:
                if is_module(f"{source}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
                elif is_private(alias.name) and source != this:
                    found.append(f"{where(path, node)}: imports {alias.name} from {source}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "fgraph":
                    modules[alias.asname or "fgraph"] = alias.name if alias.asname else "fgraph"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in modules:
                owner = ".".join([modules[value.id], *chain])
                if owner != this:
                    found.append(f"{where(path, node)}: reads {owner}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    offenders = [use for path in sources(PACKAGE, TESTS) for use in private_uses(path)]
    assert offenders == [], ("a name another module uses must be public: rename it without the leading "
                             "underscore where it is defined and everywhere it is used (or use the public "
                             "API instead):\n" + "\n".join(offenders))


def test_the_private_check_sees_imports_and_attributes():
    probe = PACKAGE / "query" / "probe.py"   # never written: the text is read as if it were there
    text = ("from fgraph.cli.base import _hidden, parse_ref\nfrom . import datoms\nfrom .probe import _mine\n"
            "import fgraph.core.canonical as canonical\ndatoms._x\ncanonical._y\nself._z\n")
    assert [use.split(": ", 1)[1] for use in private_uses(probe, text)] == [
        "imports _hidden from fgraph.cli.base", "reads fgraph.query.datoms._x", "reads fgraph.core.canonical._y"]


def test_tests_import_shared_helpers_from_tests_support_only():
    offenders = []
    for path in sources(TESTS):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                source = imported_module(node, path)
                names = [source] if source != "tests" else [f"tests.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "tests" and len(parts) > 1 and parts[1] not in ("support", "conftest"):
                    offenders.append(f"{where(path, node)}: imports {name}")
    assert offenders == [], ("a test module imports from another test module: move what it imports into a "
                             "tests/support module (one home) and import it from there in both:\n"
                             + "\n".join(offenders))


def test_nothing_imports_from_conftest():
    offenders = []
    for path in sources(TESTS, REPO / "conformance", PACKAGE):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                name = imported_module(node, path)
                names = [name] + ([f"{name}.{a.name}" for a in node.names] if name == "tests" else [])
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if any(n == "conftest" or n.endswith(".conftest") for n in names):
                offenders.append(f"{where(path, node)}: imports from conftest")
    assert offenders == [], ("conftest.py holds fixtures, which pytest passes by name; move a helper or "
                             "constant a test imports from it into tests/support and import it from there:\n"
                             + "\n".join(offenders))


def cli_runners(path: Path, text: str | None = None) -> list[str]:
    """Functions other than tests that run the fgraph executable with ``subprocess.run`` or the CLI
    with click's ``CliRunner``: runners that tests/support/cli.py already is."""
    found = []
    for function in ast.walk(ast.parse(path.read_text() if text is None else text)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name.startswith("test"):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            called = ast.unparse(node.func)
            if called == "subprocess.run" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
                first = node.args[0].elts[0] if node.args[0].elts else None
                if first is not None and FGRAPH_COMMAND.search(ast.unparse(first)):
                    found.append(f"{where(path, function)}: {function.name} runs the CLI with subprocess.run")
                    break
            if "CliRunner()" in called and node.func.attr in ("invoke", "isolation"):
                found.append(f"{where(path, function)}: {function.name} runs the CLI with CliRunner")
                break
    return found


def test_tests_run_the_cli_through_tests_support_cli():
    offenders = [runner for path in sources(TESTS) if not path.is_relative_to(SUPPORT) for runner in cli_runners(path)]
    assert offenders == [], ("a test module runs the CLI through its own helper: call run_cli (or invoke_cli, "
                             "run_cli_on_terminal) from tests/support/cli.py instead, keeping the assertions:\n"
                             + "\n".join(offenders))


def test_the_runner_check_sees_a_runner():
    probe = TESTS / "probe.py"   # never written: the text is read as if it were there
    text = ("def fg(*args):\n    return subprocess.run([FGRAPH, *args], capture_output=True)\n"
            "def other():\n    subprocess.run(['git', 'status'])\n"
            "def test_inline():\n    subprocess.run([FGRAPH, 'info'])\n"
            "def inproc(args):\n    return CliRunner().invoke(cli, args)\n")
    assert [runner.split(": ", 1)[1] for runner in cli_runners(probe, text)] == [
        "fg runs the CLI with subprocess.run", "inproc runs the CLI with CliRunner"]
