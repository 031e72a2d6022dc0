"""What the tests of ``fgraph sync`` share (store files and message logs alike): the CLI, a clean
environment, source stores written by separate processes, tails and the fan-in check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import fgraph

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
SOURCES = ("a", "b", "c")
KEYS = 20            # entities per source; each event re-asserts one, so a store's order decides its values


def env(**extra) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_")}
    out.update(extra)
    return out


def fg(*args, cwd, seed="sync-tests", check=True, input=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([FGRAPH, *map(str, args)], cwd=cwd, env=env(FGRAPH_EVENT_SEED=seed), input=input,
                          capture_output=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr.decode()
    return proc


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


def cli(*args, cwd, check=True, extra_env=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([FGRAPH, *map(str, args)], cwd=cwd, env={**env(), **(extra_env or {})},
                          capture_output=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr.decode()
    return proc


def publish(tmp: Path, url: str, *extra, names=SOURCES, **kw) -> dict:
    args = ["--json", "sync", *[a for n in names for a in ("--from", f"{n}.db")], "--to", url, *extra]
    return json.loads(cli(*args, cwd=tmp, **kw).stdout)


def consume(tmp: Path, url: str, target: str, *extra, **kw) -> dict:
    return json.loads(cli("--json", "sync", "--from", url, "--to", target, *extra, cwd=tmp, **kw).stdout)
