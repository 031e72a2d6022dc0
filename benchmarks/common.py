"""Shared helpers for the benchmarks: building stores, timing commands, peak RSS of a child."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import fgraph  # noqa: E402

RSS_WRAPPER = r"""
import json, resource, subprocess, sys, time
stdin = open(sys.argv[1], "rb") if sys.argv[1] != "-" else None
stdout = open(sys.argv[2], "wb") if sys.argv[2] != "-" else subprocess.DEVNULL
start = time.perf_counter()
proc = subprocess.run(sys.argv[3:], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
elapsed = time.perf_counter() - start
print(json.dumps({"rc": proc.returncode, "seconds": elapsed, "stderr": proc.stderr.decode()[-500:],
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def fgraph_executable() -> str:
    candidate = os.path.join(os.path.dirname(sys.executable), "fgraph")
    return candidate if os.path.exists(candidate) else shutil.which("fgraph") or "fgraph"


def run_measured(argv: list, *, stdin: str = "-", stdout: str = "-", env: dict | None = None) -> dict:
    """Run a command, returning wall seconds and the child's peak RSS (MiB)."""
    out = subprocess.run([sys.executable, "-c", RSS_WRAPPER, stdin, stdout, *argv], capture_output=True,
                         env=env or os.environ.copy(), check=True)
    result = json.loads(out.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"{argv} failed: {result['stderr']}")
    return result


def event_payload(rng: random.Random, i: int, people: int) -> dict:
    """3–5 facts: text, int, float, sometimes a ref, a long text or a json value."""
    person = f"person-{rng.randrange(people)}"
    data = {"id": person, "person/name": f"Person {i} " + "x" * rng.randrange(20), "person/age": rng.randrange(100)}
    roll = rng.random()
    if roll < 0.4:
        data["person/score"] = rng.random() * 1000
    if roll > 0.6:
        data["person/knows"] = {"ref": f"person-{rng.randrange(people)}"}
    if rng.random() < 0.05:
        data["person/bio"] = "lorem ipsum " * 30
    if rng.random() < 0.2:
        data["person/prefs"] = {"json": {"theme": rng.choice(["dark", "light"]), "n": i}}
    return data


def build_store(path: str, events: int, seed: int = 11) -> float:
    """A store with ``events`` transactions; synchronous=OFF while building (benchmark setup only)."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    rng = random.Random(seed)
    db = fgraph.connect(path)
    db.connection.execute("PRAGMA synchronous = OFF")
    db.declare("person/knows", ref=True)
    start = time.perf_counter()
    for i in range(events - 1):
        db.transact(event_payload(rng, i, max(10, events // 3)))
    db.close()
    return time.perf_counter() - start


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def write_lines(path: str, count: int, seed: int = 5) -> None:
    """``count`` one-record NDJSON lines for ``fgraph add`` (the payloads of ``build_store``)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        for i in range(count):
            out.write(json.dumps(event_payload(rng, i, max(10, count // 3))) + "\n")
