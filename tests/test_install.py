"""fgraph as users install it (issue 26): the sdist and the wheel built by ``python -m build``, the
wheel installed with no extras into a fresh virtual environment, and the CLI and the MCP server run
from there — not from the source tree, where an editable install hides a package left out of the
wheel and an import nobody declared.

The artifacts and environments are cached under ``build/user-install/``, keyed by what they are
made from (the sources; the declared requirements), so a second run costs seconds: a changed
source rebuilds the wheel and reinstalls fgraph alone, a changed requirement makes a new
environment. Building needs the package registry (setuptools for the isolated build, the
dependencies for the environment), as ``make test`` does anyway.
"""

from __future__ import annotations

import ast
import email.parser
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.support.cli import run_cli_on_terminal
from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED
from tests.support.mcp import call, session_run

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "fgraph"
CACHE = REPO / "build" / "user-install"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
# The modules that need an extra: the CLI imports them only in the command that uses them.
EXTRA_MODULES = {"fgraph.bridges.browse.app": "browse", "fgraph.bridges.browse.pages": "browse",
                 "fgraph.bridges.sync.adapters.nats": "nats",
                 "fgraph.bridges.sync.adapters.nats_urls": "nats", "fgraph.bridges.sync.adapters.nats_tls": "nats",
                 "fgraph.core.replica": "litestream", "fgraph.bridges.embed_model": "embed",
                 "fgraph.query.search.vector_index": "vectors"}


# -- what the project declares and what its code imports -----------------------------------------

def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group(0)).lower()


def declared() -> dict[str, set[str]]:
    """Distribution names by where they are declared: ``""`` for the dependencies, else the extra."""
    out = {"": {_name(r) for r in PROJECT["dependencies"]}}
    for extra, requirements in PROJECT["optional-dependencies"].items():
        out[extra] = {_name(r) for r in requirements}
    return out


def imported_distributions() -> dict[str, set[str]]:
    """Every third-party distribution an ``import`` anywhere in the package names (at the top of a
    module or inside a function alike), with the modules that import it."""
    owners = {name: {_name(d) for d in dists} for name, dists in importlib.metadata.packages_distributions().items()}
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for top in {name.split(".")[0] for name in names}:
                if top in sys.stdlib_module_names or top == "fgraph":
                    continue
                for dist in owners.get(top, {f"<no installed distribution provides {top!r}>"}):
                    found.setdefault(dist, set()).add(module)
    return found


def test_every_runtime_import_is_declared_and_every_dependency_is_used():
    wanted, uses = declared(), imported_distributions()
    test_only = wanted.pop("test")
    problems = []
    for dist, modules in sorted(uses.items()):
        extras = [extra for extra, names in wanted.items() if extra and dist in names]
        if dist in wanted[""]:
            continue
        if not extras:
            problems.append(f"{dist} is imported by {sorted(modules)} but not declared in pyproject.toml")
        elif not modules <= {m for m, extra in EXTRA_MODULES.items() if extra in extras}:
            problems.append(f"{dist} (extra {extras}) is imported outside the extra's modules: {sorted(modules)}")
    for where, names in wanted.items():
        for dist in sorted(names - set(uses)):
            problems.append(f"{dist} is declared ({where or 'dependencies'}) but no module imports it")
    assert problems == []
    assert test_only  # the test extra is the tests' own and is not checked against the package's imports


# -- the artifacts ---------------------------------------------------------------------------------

def _digest(paths) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _sources() -> list[Path]:
    files = [REPO / name for name in ("pyproject.toml", "MANIFEST.in", "README.md")]
    return files + [p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                    and p.suffix != ".pyc"]


def _keep_only(prefix: str, current: Path) -> None:
    """Drop the cached builds and environments of earlier sources, so the cache does not grow."""
    for old in CACHE.glob(prefix + "-*"):
        if old != current:
            shutil.rmtree(old, ignore_errors=True)


def _clean_env(venv: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
           and not k.startswith("FGRAPH_")}
    if venv is not None:
        env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv))
    return env


def _checked(argv, *, what: str, timeout: float, cwd=None, env=None) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env or _clean_env())
    if proc.returncode != 0:
        pytest.fail(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="session")
def artifacts() -> dict[str, Path]:
    """The sdist and the wheel of the current sources (``python -m build``: the wheel is built from
    the sdist, so a file missing from the sdist is missing from the wheel too)."""
    sources = _sources()
    out = CACHE / f"dist-{_digest(sources)}"
    if not (out / "complete").is_file():
        shutil.rmtree(out, ignore_errors=True)
        staging = out.with_name(out.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        # Built from a copy of the sources alone, as from a fresh clone: a checkout's own
        # fgraph.egg-info (left by the editable install) lists every file and would hide a
        # package that the configuration leaves out.
        tree = staging / "source"
        for path in sources:
            (tree / path.relative_to(REPO)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, tree / path.relative_to(REPO))
        _checked([sys.executable, "-m", "build", "--outdir", str(staging), str(tree)], what="python -m build",
                 timeout=900)
        shutil.rmtree(tree)
        (staging / "complete").write_text("")
        staging.rename(out)
    _keep_only("dist", out)
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))


def _environment(kind: str, artifact: Path, requirements: list[str]) -> Path:
    """A virtual environment holding ``artifact`` installed with its dependencies and no extras;
    reused while the requirements stay the same, with fgraph alone reinstalled when it changed."""
    venv = CACHE / f"{kind}-{hashlib.sha256(json.dumps(sorted(requirements)).encode()).hexdigest()[:16]}"
    marker = venv / "fgraph-artifact.sha256"
    artifact_digest = hashlib.sha256(artifact.read_bytes()).hexdigest()
    python = venv / "bin" / "python"
    if not python.exists() or not marker.exists():
        shutil.rmtree(venv, ignore_errors=True)
        _checked([sys.executable, "-m", "venv", str(venv)], what="python -m venv", timeout=300)
        _checked([str(python), "-m", "pip", "install", "-q", str(artifact)], what=f"pip install {artifact.name}",
                 timeout=1800, env=_clean_env(venv))
    elif marker.read_text() != artifact_digest:
        _checked([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(artifact)],
                 what=f"pip install {artifact.name}", timeout=900, env=_clean_env(venv))
    marker.write_text(artifact_digest)
    _keep_only(kind, venv)
    return venv


@pytest.fixture(scope="session")
def user_env(artifacts) -> Path:
    """The wheel installed as ``pip install fgraph`` would install it: no extras."""
    return _environment("wheel", artifacts["wheel"], _metadata(artifacts["wheel"]).get_all("Requires-Dist") or [])


# -- the wheel and its metadata ------------------------------------------------------------------------

def test_the_wheel_ships_every_package_directory_and_the_schema(artifacts):
    with zipfile.ZipFile(artifacts["wheel"]) as archive:
        names = set(archive.namelist())
    shipped = {str(Path(n).parent) for n in names if n.startswith("fgraph/") and n.endswith(".py")}
    source = {str(p.parent.relative_to(REPO)) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert source - shipped == set(), "package directories missing from the wheel"
    modules = {str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - names == set(), "modules missing from the wheel"
    assert {"fgraph/schema/format-v2.sql", "fgraph/schema/system-identities.json"} <= names
    assert "fgraph/py.typed" in names, "the PEP 561 marker missing from the wheel: type checkers would ignore fgraph's types"
    templates = {str(p.relative_to(REPO)) for p in (PACKAGE / "bridges" / "browse" / "templates").glob("*.html")}
    assert templates and templates <= names, "fgraph browse's templates missing from the wheel"
    with zipfile.ZipFile(artifacts["wheel"]) as archive:
        assert archive.read("fgraph/schema/format-v2.sql") == (PACKAGE / "schema" / "format-v2.sql").read_bytes()
    assert not any(n.startswith(("tests/", "schema/")) for n in names)


def test_the_wheel_declares_the_projects_requirements_and_version(artifacts):
    metadata = _metadata(artifacts["wheel"])
    from fgraph.version import __version__
    assert metadata["Version"] == __version__
    assert artifacts["wheel"].name == f"fgraph-{__version__}-py3-none-any.whl"
    requires = metadata.get_all("Requires-Dist") or []
    base = {_name(r) for r in requires if "extra ==" not in r}
    assert base == declared()[""]
    browse = {_name(r) for r in requires if re.search(r"extra\s*==\s*['\"]browse['\"]", r)}
    assert browse == declared()["browse"]


# -- the installed wheel, used -----------------------------------------------------------------------

def _fgraph(venv: Path) -> str:
    return str(venv / "bin" / "fgraph")


def _cli_env(venv: Path) -> dict:
    return dict(_clean_env(venv), FGRAPH_CLOCK=str(CONFORMANCE_CLOCK), FGRAPH_EVENT_SEED=CONFORMANCE_SEED,
                TERM="xterm", COLUMNS="100")


def test_the_installed_package_is_the_wheel_and_every_module_imports(user_env, tmp_path):
    probe = (
        "import importlib, json, pkgutil, sys, fgraph\n"
        "skip = set(json.loads(sys.argv[1]))\n"
        "failed = {}\n"
        "for info in pkgutil.walk_packages(fgraph.__path__, 'fgraph.'):\n"
        "    if info.name in skip: continue\n"
        "    try: importlib.import_module(info.name)\n"
        "    except Exception as exc: failed[info.name] = repr(exc)\n"
        "print(json.dumps({'file': fgraph.__file__, 'version': fgraph.__version__, 'failed': failed}))\n")
    out = _checked([str(user_env / "bin" / "python"), "-c", probe, json.dumps(sorted(EXTRA_MODULES))],
                   what="importing every module", timeout=300, cwd=tmp_path, env=_clean_env(user_env))
    report = json.loads(out.stdout)
    assert Path(report["file"]).is_relative_to(user_env), "fgraph was imported from outside the environment"
    assert report["failed"] == {}
    from fgraph.version import __version__
    assert report["version"] == __version__


def test_the_installed_cli_starts_writes_and_streams(user_env, tmp_path):
    env = _cli_env(user_env)
    fgraph = _fgraph(user_env)
    from fgraph.version import __version__
    assert _checked([fgraph, "--version"], what="--version", timeout=60, cwd=tmp_path, env=env).stdout == \
        __version__ + "\n"
    assert "Usage: fgraph" in _checked([fgraph, "--help"], what="--help", timeout=60, cwd=tmp_path, env=env).stdout
    added = _checked([fgraph, "--db", "x.db", "--json", "add", '{"id":"ada","person/name":"Ada"}'], what="add",
                     timeout=60, cwd=tmp_path, env=env)
    event = json.loads(added.stdout)["event"]
    tail = _checked([fgraph, "--db", "x.db", "tail"], what="tail", timeout=60, cwd=tmp_path, env=env).stdout
    assert [json.loads(line)["event"] for line in tail.splitlines()] == [event]
    got = _checked([fgraph, "--db", "x.db", "--json", "get", "ada"], what="get", timeout=60, cwd=tmp_path, env=env)
    assert json.loads(got.stdout)["person/name"] == "Ada"


def test_long_commands_draw_their_progress_on_a_terminal(user_env, tmp_path):
    """The progress display (rich) is what a terminal gets: it must be installed with fgraph."""
    env, fgraph = _cli_env(user_env), _fgraph(user_env)
    for i in range(40):
        _checked([fgraph, "--db", "a.db", "add", json.dumps({"id": f"n{i}", "note/text": f"note {i}"})],
                 what="add", timeout=60, cwd=tmp_path, env=env)
    (tmp_path / "events.ndjson").write_text(
        _checked([fgraph, "--db", "a.db", "tail"], what="tail", timeout=60, cwd=tmp_path, env=env).stdout)
    for args, label, result in ((["--db", "b.db", "apply", "events.ndjson"], b"applying", b'"applied": 40'),
                                (["--db", "a.db", "backup", "copy.db"], b"backing up", b'"path": "copy.db"'),
                                (["--db", "copy.db", "doctor"], b"checking", b"ok: no problems found")):
        code, out, screen = run_cli_on_terminal(args, cwd=tmp_path, env=env, executable=fgraph)
        assert (code, b"rror" in screen) == (0, False), screen.decode("utf-8", "replace")
        assert label in screen and b"\x1b[" in screen
        assert result in out and b"\x1b" not in out


def test_the_installed_mcp_server_answers_the_sdk_client(user_env, tmp_path):
    store = tmp_path / "m.db"
    _checked([_fgraph(user_env), "--db", str(store), "add", '{"id":"ada","person/name":"Ada Lovelace"}'],
             what="add", timeout=60, env=_cli_env(user_env))

    async def script(session):
        tools = [tool.name for tool in (await session.list_tools()).tools]
        return tools, await call("about", entity="ada")(session)

    tools, (is_error, structured, _) = session_run(_fgraph(user_env), store, script)
    assert "about" in tools and "remember" not in tools
    assert is_error is False and structured["data"] == {"person/name": "Ada Lovelace"}


def test_browse_without_its_extra_says_which_extra_to_install(user_env, tmp_path):
    env, fgraph = _cli_env(user_env), _fgraph(user_env)
    _checked([fgraph, "--db", "x.db", "init"], what="init", timeout=60, cwd=tmp_path, env=env)
    proc = subprocess.run([fgraph, "--db", "x.db", "browse", "--port", "0"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env=env)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("Unsupported: ") and "fgraph[browse]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_sync_to_nats_without_its_extra_says_which_extra_to_install(user_env, tmp_path):
    env, fgraph = _cli_env(user_env), _fgraph(user_env)
    _checked([fgraph, "--db", "x.db", "init"], what="init", timeout=60, cwd=tmp_path, env=env)
    proc = subprocess.run([fgraph, "sync", "--from", "x.db", "--to", "nats://127.0.0.1:4222/EVENTS"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("Unsupported: ") and "fgraph[nats]" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- the sdist ---------------------------------------------------------------------------------------------

def test_the_sdist_installs_and_reports_its_version(artifacts, tmp_path):
    venv = _environment("sdist", artifacts["sdist"], _metadata(artifacts["wheel"]).get_all("Requires-Dist") or [])
    from fgraph.version import __version__
    out = _checked([_fgraph(venv), "--version"], what="--version", timeout=60, cwd=tmp_path, env=_cli_env(venv))
    assert out.stdout == __version__ + "\n"
