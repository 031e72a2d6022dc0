"""Proves the shape of the package that import-linter cannot see: the faces hold no SQL, and a
module over about 400 lines says in its docstring why (docs/architecture.md)."""

from __future__ import annotations

import ast
import json
import pathlib
import re
import subprocess
import sys

import fgraph
from tests.support.paths import TESTS

PACKAGE = pathlib.Path(fgraph.__file__).parent
SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|PRAGMA|BEGIN|CREATE|DROP|WITH)\s")


def sql_strings(source: str) -> list[str]:
    return [node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value)]


def test_the_faces_and_bridges_hold_no_sql():
    modules = [p for wing in ("cli", "mcp", "bridges") for p in (PACKAGE / wing).rglob("*.py")]
    assert len(modules) >= 20  # the wings exist where this test looks
    offenders = {str(p.relative_to(PACKAGE)): sql_strings(p.read_text()) for p in modules}
    assert {k: v for k, v in offenders.items() if v} == {}
    assert sql_strings('conn.execute("SELECT 1")') == ["SELECT 1"]   # the check itself sees SQL


def test_long_modules_say_why():
    unexplained = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if text.count("\n") > 420 and "Size:" not in (ast.get_docstring(ast.parse(text)) or ""):
            unexplained.append(str(path.relative_to(PACKAGE)))
    assert unexplained == []


def test_no_module_is_over_500_lines():
    sizes = {str(p.relative_to(PACKAGE)): p.read_text().count("\n") for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 500} == {}
    assert max(sizes.values()) > 300  # the check reads real modules


def test_the_conformance_runner_is_a_package_of_small_modules_with_dispatch_tables():
    runner = TESTS.parent / "conformance" / "runner"
    sizes = {p.name: p.read_text().count("\n") for p in runner.glob("*.py")}
    assert len(sizes) >= 5 and {name: n for name, n in sizes.items() if n > 400} == {}
    # no method picks its action through a chain of comparisons: actions are table entries
    for path in runner.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                tests = [n for n in ast.walk(node) if isinstance(n, ast.Compare)
                         and isinstance(n.left, ast.Name) and n.left.id == "action"
                         and any(isinstance(op, ast.Eq) for op in n.ops)]
                assert len(tests) <= 2, f"{path.name}:{node.name} compares `action` {len(tests)} times"


def test_classes_and_facade_methods_have_docstrings():
    missing = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not ast.get_docstring(node):
                missing.append(f"{path.name}:{node.name}")
    facade = ast.parse((PACKAGE / "db.py").read_text())
    for node in ast.walk(facade):
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and not ast.get_docstring(node):
            missing.append(f"db.py:{node.name}")
    assert missing == []


def test_cli_start_up_leaves_heavy_libraries_for_the_commands_that_need_them():
    # Every CLI call pays its imports: numpy alone doubled `fgraph tail`'s start-up (0.12 -> 0.4 s).
    probe = ("import sys, fgraph.cli.main\n"
             "print(' '.join(m for m in ('numpy', 'mcp', 'datasette', 'anyio', 'pydantic', 'uvicorn')"
             " if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.split() == []


def _modules_loaded_by(argv: list[str], cwd) -> set[str]:
    """The fgraph modules (and the heavy libraries) that one CLI call imports, by running it."""
    probe = ("import sys, json\n"
             "from fgraph.cli.main import run\n"
             "code = run(json.loads(sys.argv[1]))\n"
             "sys.stderr.write('\\n' + json.dumps(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", probe, json.dumps(argv)], capture_output=True, text=True, cwd=cwd,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stderr.rsplit("\n", 1)[1]))


STARTUP_NEVER = ("numpy", "mcp", "datasette", "anyio", "pydantic", "uvicorn", "rich", "tempfile",
                 "importlib.resources")


def test_help_and_version_load_no_engine(tmp_path):
    """benchmarks/startup.py: `fgraph --help` within 1.5x of a bare interpreter importing apsw, orjson
    and click. Help and usage errors load the commands, not the façade nor any wing above core."""
    for argv in (["--help"], ["--version"], ["q", "--help"]):
        loaded = _modules_loaded_by(argv, tmp_path)
        assert {m for m in loaded if m.startswith(("fgraph.db", "fgraph.ops", "fgraph.streams", "fgraph.query"))} \
            == set(), argv
        assert {m for m in STARTUP_NEVER if m in loaded} == set(), argv


def test_reading_an_entity_loads_no_query_stream_or_ops_wing(tmp_path):
    """`fgraph info` and `fgraph get` open the store and read through core alone."""
    fgraph.connect(str(tmp_path / "s.db")).close()
    for argv in (["--db", "s.db", "info"], ["--db", "s.db", "get", "nobody"]):
        loaded = _modules_loaded_by(argv, tmp_path)
        assert {m for m in loaded if m.startswith(("fgraph.ops", "fgraph.streams", "fgraph.query"))} == set(), argv
        assert {m for m in STARTUP_NEVER if m in loaded} == set(), argv


def test_vector_search_still_loads_numpy_when_it_needs_it(tmp_path):
    probe = ("import sys, fgraph\n"
             "db = fgraph.connect(sys.argv[1])\n"
             "db.transact({'id': 'a', 'doc/v': {'vector': [1.0, 0.0]}})\n"
             "hits = db.search(vector=[1.0, 0.0], vector_attribute='doc/v', k=1)\n"
             "print(len(hits.hits), 'numpy' in sys.modules)\n"
             "db.close()")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "v.db")], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["1", "True"]


def test_one_word_per_idea():
    """docs/architecture.md §Words: latest, basis, since, through. The drifted and dead names stay gone;
    the only ``t1`` left is the published ``Db.diff(t1, t2)`` signature and the CLI command mirroring it."""
    drifted = re.compile(r"\b(initial_basis|latest_basis|after_tx|read_error|check_gid_unused|RECEIPT_ATTRS)\b")
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in PACKAGE.rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1) if drifted.search(line)]
    assert found == []
    t1_users = sorted({path.name for path in PACKAGE.rglob("*.py") if re.search(r"\bt1\b(?!\")", path.read_text())})
    assert t1_users == ["db.py", "main.py"]


# Modules whose behaviour is proven under another test module's name (a family of modules, or a
# face command tested end to end). Every other module has tests/test_<name>.py or test_<wing>_<name>.py.
TESTED_BY = {
    "bridges/sync/adapters/nats_subjects.py": ["test_adapters_contract.py", "test_sync_quarantine.py"],
    "core/timepoints.py": ["test_since_grammar.py"],
    "core/selectors.py": ["test_plan.py", "test_transact.py"],
    "core/operations.py": ["test_plan.py", "test_transact.py"],
    "query/datalog/pull_syntax.py": ["test_datalog_pull.py", "test_datalog_syntax.py"],
    "cli/base.py": ["test_cli.py", "test_cli_conventions.py"],
    "cli/main.py": ["test_cli.py", "test_cli_conventions.py"],
    "core/probe.py": ["test_paths.py"],
    "cli/browse.py": ["test_browse_app.py"],
    "cli/help.py": ["test_cli_conventions.py"],
    "cli/imports.py": ["test_import.py"],
    "cli/questions.py": ["test_query_cli.py", "test_query_schema.py", "test_search_run.py"],
    "cli/reference.py": ["test_cli_conventions.py"],
    "cli/sync.py": ["test_sync_files.py"],
    "cli/tail.py": ["test_tail_resume.py", "test_events.py"],
    "bridges/collect.py": ["test_tail_resume.py", "test_collector_kill.py"],
    "streams/follow.py": ["test_tail_resume.py", "test_collector_kill.py"],
    "streams/cursor.py": ["test_tail_resume.py", "test_collector_kill.py"],
    "cli/forget.py": ["test_excise.py", "test_sync_reach.py"],
    "bridges/importers/pipeline.py": ["test_import.py", "test_progress.py"],
    "mcp/resources.py": ["test_mcp.py"],
    "mcp/server.py": ["test_mcp.py", "test_mcp_inspector.py"],
    "ops/doctor/checkup.py": ["test_doctor.py", "test_doctor_worker.py"],
    "ops/doctor/derived.py": ["test_doctor.py"],
    "ops/doctor/logical.py": ["test_doctor.py"],
    "ops/doctor/payloads.py": ["test_doctor.py", "test_doctor_findings.py"],
    "ops/doctor/physical.py": ["test_doctor.py"],
    "ops/doctor/repair.py": ["test_doctor.py", "test_doctor_findings.py", "test_scrub.py"],
    "ops/doctor/report.py": ["test_doctor_findings.py"],
    "query/datalog/ask.py": ["test_datalog_engine.py", "test_datalog_results.py"],
    "query/browse/sql.py": ["test_browse_app.py"],
    "query/context/shape.py": ["test_context_changes.py", "test_context_entities.py"],
    "query/context/timing.py": ["test_context_start.py"],
    "query/manifest.py": ["test_query_schema.py"],
    "query/datalog/predicates.py": ["test_datalog_engine.py", "test_datalog_syntax.py", "test_interop_queries.py"],
    "query/search/lists.py": ["test_search_run.py"],
    "query/search/render.py": ["test_search_run.py"],
    "query/search/request.py": ["test_search_run.py", "test_interop_search.py"],
    "query/search/words.py": ["test_recall_quirks.py", "test_search_entities.py"],
    "query/search/typos.py": ["test_recall_quirks.py"],
    "bridges/embed_model.py": ["test_recall_hybrid.py"],
    "query/datalog/shaping.py": ["test_datalog_results.py"],
    "query/datalog/terms.py": ["test_datalog_engine.py", "test_interop_queries.py"],
    "bridges/proposals/decide.py": ["test_proposals_cli.py", "test_proposals_kill.py"],
    "bridges/proposals/show.py": ["test_proposals_cli.py"],
    "cli/proposals.py": ["test_proposals_cli.py", "test_proposals_kill.py"],
    "mcp/planning.py": ["test_propose.py", "test_propose_concurrency.py"],
}


def test_every_module_has_its_test_module():
    present = {path.name for path in TESTS.rglob("test_*.py")}  # tests/<wing>/, tests/interop/, …
    assert len(present) > 80
    untested, stale = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        rel = str(path.relative_to(PACKAGE))
        own = [f"test_{path.stem}.py", f"test_{path.parent.name}_{path.stem}.py"]
        if rel in TESTED_BY:
            stale += [name for name in TESTED_BY[rel] if name not in present]
        elif not any(candidate in present for candidate in own):
            untested.append(rel)
    assert untested == [] and stale == []


def import_graph(package: pathlib.Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the fgraph modules it imports anywhere in its body (lazy imports count too)."""
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def known(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        home = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                graph[name].update(known(a.name) for a in node.names if a.name.startswith("fgraph"))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(home.split(".")[:len(home.split(".")) - node.level + 1] + ([base] if base else []))
                if base.startswith("fgraph"):
                    graph[name].update(known(f"{base}.{a.name}") for a in node.names)
        graph[name] -= {name, ""}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_import_cycles_anywhere_in_the_package():
    assert cycles(import_graph()) == []
    # the check itself sees a cycle, a lazy import included
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
