"""Shared by the torture families (tests/torture): size, the CLI runner, the checks every family makes, the summary."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter

FGRAPH = os.path.join(os.path.dirname(sys.executable), "fgraph")
FULL = os.environ.get("FGRAPH_TORTURE") == "full"
SEED = 15   # fixed: a failure reproduces by running the same family again
SUMMARY: dict[str, str] = {}
CALL_TIMEOUT = 120


def size(bounded: int, full: int) -> int:
    """How many rounds a family runs: ``make test`` runs the bounded count, ``make torture`` the full one."""
    return full if FULL else bounded


def rng(family: str) -> random.Random:
    return random.Random(f"{SEED}:{family}")


VERDICTS = ("lost", "partial", "tracebacks", "hangs")


def report(family: str, counts: Counter, **figures) -> None:
    """One summary line per family, printed at the end of the run (and kept for docs/reliability.md).
    The four verdicts are always shown; a family that saw any of them has already failed its test,
    so a printed line means they stayed at 0."""
    shown = " ".join(f"{key}={counts[key]}" for key in VERDICTS) + " | "
    shown += " ".join(f"{key}={counts[key]}" for key in sorted(counts) if key not in VERDICTS)
    extra = " ".join(f"{key}={value}" for key, value in figures.items())
    SUMMARY[family] = f"torture {family}: {shown} {extra}".rstrip()


def cli(*args, stdin: bytes | None = None, timeout: float = CALL_TIMEOUT, env=None):
    """(exit code, stdout, stderr) of one CLI call; a hang fails the family."""
    proc = subprocess.run([FGRAPH, *args], input=stdin, capture_output=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def is_typed_failure(code: int, out: str, err: str) -> bool:
    """Exit 1 with one ``Name: message`` line, no traceback, no internal error, nothing on stdout."""
    names = ("NotFound", "Conflict", "SchemaError", "TypeError", "QueryError", "FormatError", "ReadOnly",
             "TooLarge", "Unsupported")
    return (code == 1 and out == "" and err.split(":")[0] in names and "Traceback" not in err
            and "internal error" not in err)


def state(path) -> tuple[int, str]:
    """(latest transaction, logical digest) of a database, through the public library."""
    import fgraph
    with fgraph.connect(str(path), read_only=True) as db:
        return db.latest_tx(), db.logical_digest()


def content(path, attributes=("t/n", "t/s", "t/secret")) -> tuple[int, frozenset]:
    """(number of transactions, current user facts): what a run leaves, whatever its clock and event
    UUIDs were (a retry allocates new ones, so logical digests of two runs differ)."""
    import fgraph
    facts = set()
    with fgraph.connect(str(path), read_only=True) as db:
        transactions = db.stats()["transactions"]
        for attribute in attributes:
            cursor = None
            while True:
                try:
                    page = db.datoms("avet", [attribute], limit=1000, cursor=cursor)
                except fgraph.NotFound:
                    break
                facts.update((item["e"], attribute, repr(item["v"])) for item in page["items"])
                cursor = page.get("next_cursor")
                if not cursor:
                    break
    return transactions, frozenset(facts)


def doctor_ok(path) -> bool:
    return verdict(path) == "ok"


def verdict(path) -> str:
    """What doctor says of a file after a failure: "ok"; "scrub_owed" (an excision committed but its
    physical scrub did not finish, which doctor --repair completes); "uninitialized" (SQLite created
    the file, genesis never committed: any writer initializes it); else doctor's own words."""
    import fgraph
    try:
        with fgraph.connect(str(path), read_only=True) as db:
            found = db.doctor()
    except fgraph.FgraphError as exc:
        if "hot journal" in str(exc):
            # killed inside a write with a rollback journal: the next writer undoes it, so ask as one
            try:
                with fgraph.connect(str(path)) as db:
                    found = db.doctor()
            except fgraph.FgraphError as again:
                return f"{again.name}: {again}"
        else:
            return "uninitialized" if "not an initialized fgraph database" in str(exc) else f"{exc.name}: {exc}"
    if found.get("ok") is True:
        return "ok"
    if [p for p in found["problems"] if not str(p).startswith("excision scrub pending")] == []:
        return "scrub_owed"
    return json.dumps(found, default=str)


def wait_for(predicate, timeout: float = 30.0, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
