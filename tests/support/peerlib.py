"""Helpers shared by the cross-runtime tests: the deterministic environment, CLI calls to our
executable and to the peer (FGRAPH_PEER), and NDJSON the peer reads the same way we do."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED

ENV = {"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": CONFORMANCE_SEED}


def peer_executable() -> str | None:
    """The other runtime's executable the cross-runtime tests compare with (FGRAPH_PEER), if any."""
    return os.environ.get("FGRAPH_PEER") or None


@contextlib.contextmanager
def deterministic_env(**extra: str):
    """11 §2.3 for in-process library calls (hypothesis examples cannot use monkeypatch)."""
    values = {**ENV, **extra}
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class CliError(Exception):
    def __init__(self, name: str, stderr: str):
        super().__init__(f"{name}: {stderr}")
        self.name = name


def run_cli(executable: str, path: Path, *args: str, stdin: bytes | None = None,
            seed: str = CONFORMANCE_SEED) -> bytes:
    """One CLI call with the deterministic environment; stdout, or CliError for a typed error."""
    env = dict(os.environ, **ENV)
    env["FGRAPH_EVENT_SEED"] = seed
    env.pop("FGRAPH_DB", None)
    proc = subprocess.run([executable, "--db", str(path), *args], input=stdin, env=env,
                          capture_output=True, timeout=120, check=False)
    if proc.returncode == 0:
        return proc.stdout
    stderr = proc.stderr.decode("utf-8", errors="replace")
    first = stderr.splitlines()[0] if stderr else ""
    name, sep, _ = first.partition(": ")
    if proc.returncode == 1 and sep and name.isalpha():
        raise CliError(name, stderr)
    raise AssertionError(f"`{executable} {' '.join(args)}` exited {proc.returncode}: {stderr[-2000:]}")


def peer(path: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return run_cli(peer_executable(), path, *args, stdin=stdin)


def peer_json(path: Path, *args: str, stdin: bytes | None = None):
    return json.loads(peer(path, "--json", *args, stdin=stdin))


def our_executable() -> str:
    candidate = Path(sys.executable).parent / "fgraph"
    return str(candidate) if candidate.exists() else "fgraph"


def ndjson(transactions: list) -> bytes:
    # json.dumps (ASCII escapes) keeps 0.0 a float and keeps U+2028 from splitting lines in the peer.
    text = "".join(json.dumps(t, ensure_ascii=True) + "\n" for t in transactions)
    if len(transactions) == 1:
        text += "\n"  # NDJSON of one line is one document either way
    return text.encode()


_RUNTIMES: dict = {}


def peer_replay(path: Path, transactions: list, our_outcomes: list) -> None:
    """Every transaction, ours rejected ones included, as its own peer ``add``: each must end as it
    ended in ours (None for success, else the same error name)."""
    from tests.support.runtimes import Runtime  # noqa: PLC0415 - the fork server only for replays

    executable = peer_executable()
    runtime = _RUNTIMES.get(executable)
    if runtime is None:
        runtime = _RUNTIMES[executable] = Runtime(executable, "peer")
        import atexit  # noqa: PLC0415

        atexit.register(runtime.close)
    theirs = []
    for data in transactions:
        outcome = runtime.run(path, "--json", "add", "-", stdin=(json.dumps(data, ensure_ascii=True) + "\n").encode())
        if outcome.rc not in (0, 1) or (outcome.rc == 1 and not outcome.error_name):
            raise AssertionError(f"the peer crashed on {json.dumps(data)[:300]}: {outcome.stderr[-2000:]!r}")
        theirs.append(outcome.error_name or None)
    assert theirs == list(our_outcomes), json.dumps(list(zip(our_outcomes, theirs, transactions)), default=str)[:3000]


def published(args: list[str]) -> list[str]:
    """Our arguments for the published output of ``args``: an ``add`` without ``--batch-size``
    gets ``--reports`` (every NDJSON record's report, not our summary: decision A3 in docs/cli.md),
    an ``excise`` gets ``--published-receipt`` (its erased values: decision F6 in docs/forgetting.md)."""
    if "excise" in args:
        at = args.index("excise")
        return [*args[:at + 1], "--published-receipt", *args[at + 1:]]
    if "add" not in args or any(str(a).startswith("--batch-size") for a in args):
        return list(args)
    at = args.index("add")
    return [*args[:at + 1], "--reports", *args[at + 1:]]
