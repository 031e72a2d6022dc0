"""What the tests of ``fgraph sync`` share (store files and message logs alike): the CLI, a clean
environment, source stores written by separate processes, tails, the fan-in check and polling."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import fgraph
from tests.support.cli import FGRAPH, CliResult, run_cli

SOURCES = ("a", "b", "c")
KEYS = 20            # entities per source; each event re-asserts one, so a store's order decides its values


def env(**extra) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_")}
    out.update(extra)
    return out


def fg(*args, cwd, seed="sync-tests", check=True, input=None, timeout: float = 120) -> CliResult:
    """``fgraph ARGS`` in ``cwd`` through ``run_cli``, with no FGRAPH_* setting but the event ``seed``;
    the output as bytes. ``check`` fails the test on a non-zero exit, with stderr as the message."""
    result = run_cli(*args, cwd=cwd, env=env(FGRAPH_EVENT_SEED=seed), input=input, text=False, timeout=timeout)
    if check:
        assert result.returncode == 0, result.stderr.decode()
    return result


def records(name: str, first: int, count: int) -> bytes:
    return "".join(json.dumps({"id": f"{name}-{i % KEYS}", "item/v": i, "item/src": name}) + "\n"
                   for i in range(first, first + count)).encode()


def write_sources(tmp: Path, count: int, first: int = 0, names=SOURCES, seed: str = "src") -> None:
    """Each source store is written by its own process, one transaction per record, all at once; each
    with its own event seed (seeded UUIDs depend on the seed and the local tx id only)."""
    procs = [subprocess.Popen([FGRAPH, "--db", f"{name}.db", "add", "-"], cwd=tmp, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env(FGRAPH_EVENT_SEED=f"{seed}-{name}"))
             for name in names]
    for name, proc in zip(names, procs):
        _, err = proc.communicate(records(name, first, count), timeout=120)
        assert proc.returncode == 0, err.decode()


def tail(path: Path) -> list[str]:
    with fgraph.connect(str(path), read_only=True) as db:
        return list(db.iter_events())


def state(path: Path, names=SOURCES) -> dict:
    """The current facts of every entity the sources write, by name."""
    with fgraph.connect(str(path), read_only=True) as db:
        return {f"{n}-{k}": db.entity(f"{n}-{k}") for n in names for k in range(KEYS)}


def sync(tmp: Path, *extra, names=SOURCES, target="central.db", check=True):
    args = ["--json", "sync", *[a for n in names for a in ("--from", f"{n}.db")], "--to", target, *extra]
    proc = fg(*args, cwd=tmp, check=check)
    return json.loads(proc.stdout) if proc.returncode == 0 else proc


def is_subsequence(part: list, whole: list) -> bool:
    items = iter(whole)
    return all(any(x == y for y in items) for x in part)


def assert_fan_in(tmp: Path, target: str = "central.db", names=SOURCES) -> None:
    central = tail(tmp / target)
    assert all(n == 1 for n in Counter(central).values())
    expected = [line for n in names for line in tail(tmp / f"{n}.db")]
    assert sorted(central) == sorted(expected)                 # every source event exactly once, same bytes
    for n in names:
        assert is_subsequence(tail(tmp / f"{n}.db"), central)  # and in its source's order


def cli(*args, cwd, check=True, extra_env=None, timeout: float = 120) -> CliResult:
    """``fgraph ARGS`` in ``cwd`` through ``run_cli``, with no FGRAPH_* setting but ``extra_env``; the output
    as bytes. ``check`` fails the test on a non-zero exit, with stderr as the message."""
    result = run_cli(*args, cwd=cwd, env={**env(), **(extra_env or {})}, text=False, timeout=timeout)
    if check:
        assert result.returncode == 0, result.stderr.decode()
    return result


def wait_for(condition, timeout: float = 60, what: str = "condition") -> None:
    """Polls ``condition`` until it holds; fails the test after ``timeout`` seconds, naming ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def publish(tmp: Path, url: str, *extra, names=SOURCES, **kw) -> dict:
    args = ["--json", "sync", *[a for n in names for a in ("--from", f"{n}.db")], "--to", url, *extra]
    return json.loads(cli(*args, cwd=tmp, **kw).stdout)


def consume(tmp: Path, url: str, target: str, *extra, **kw) -> dict:
    return json.loads(cli("--json", "sync", "--from", url, "--to", target, *extra, cwd=tmp, **kw).stdout)


def write_items(path, *items) -> None:
    """Commit each item as its own transaction in the store at ``path``."""
    with fgraph.connect(str(path)) as db:
        for item in items:
            db.transact(item)


def store_ident(path) -> str:
    """The sync identity (``store_id``) of the store at ``path``."""
    from fgraph.bridges.sync.log import store_id
    with fgraph.connect(str(path), read_only=True) as db:
        return store_id(db)
