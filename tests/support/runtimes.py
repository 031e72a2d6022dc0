"""Drive a runtime's CLI many times cheaply: a fork server when the runtime is a Python
console script (ours, or the published runtime behind ``refpeer``), a plain subprocess
per command otherwise (any other runtime's executable in ``FGRAPH_PEER``).

Either way every command gets the deterministic environment of spec 11 §2.3 and runs
as a real CLI call: real argv, stdin, stdout, stderr and exit status.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED

SERVER = Path(__file__).with_name("cliserver.py")
ENV = {"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": CONFORMANCE_SEED}


class Outcome(NamedTuple):
    rc: int
    stdout: bytes
    stderr: bytes

    def parsed(self) -> tuple:
        """``("ok", the JSON it printed)`` or ``("error", the error name)``: what differential tests compare."""
        return ("error", self.error_name) if self.rc != 0 else ("ok", json.loads(self.stdout))

    @property
    def error_name(self) -> str:
        """The typed error's name (08: ``Name: message`` on the first stderr line), or ''."""
        if self.rc == 0:
            return ""
        first = self.stderr.decode("utf-8", "replace").split("\n", 1)[0]
        name, sep, _ = first.partition(":")
        return name if sep and name.isalpha() else f"<exit {self.rc}: {first[:200]}>"


def python_console_script(executable: str) -> tuple[str, str] | None:
    """(interpreter, script) when ``executable`` is a Python console script, else None."""
    path = Path(executable)
    if path.name == "refpeer":
        try:
            script = subprocess.run([executable, "--path"], capture_output=True, text=True, check=True,
                                    timeout=600).stdout.strip()
            python = subprocess.run([executable, "--python"], capture_output=True, text=True, check=True,
                                    timeout=600).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
        return python, script
    try:
        with open(path, "rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if first.startswith(b"#!") and b"python" in first:
        interpreter = first[2:].strip().split()[0].decode()
        if os.access(interpreter, os.X_OK):
            return interpreter, str(path)
    return None


class Runtime:
    """One runtime's CLI; ``run(db, *args)`` returns an Outcome."""

    def __init__(self, executable: str, name: str):
        self.executable, self.name = executable, name
        self.env = dict(os.environ, **ENV)
        self.env.pop("FGRAPH_DB", None)
        # Each runtime finds its own package through its own environment; a PYTHONPATH
        # meant for this test process would shadow the other runtime's package.
        self.env.pop("PYTHONPATH", None)
        self.server = None
        found = python_console_script(executable)
        if found is not None and os.environ.get("FGRAPH_NO_FORK_SERVER") != "1":
            python, script = found
            self.server = subprocess.Popen([python, str(SERVER), script], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, env=self.env, text=True, bufsize=1)
            ready = self.server.stdout.readline()
            if '"ready"' not in ready:
                self.close()
                self.server = None

    def run(self, db: Path | str, *args: str, stdin: bytes | None = None) -> Outcome:
        argv = ["--db", str(db), *args]
        if self.server is not None:
            request = {"args": argv, "stdin": base64.b64encode(stdin or b"").decode()}
            self.server.stdin.write(json.dumps(request) + "\n")
            self.server.stdin.flush()
            reply = json.loads(self.server.stdout.readline())
            return Outcome(reply["rc"], base64.b64decode(reply["stdout"]), base64.b64decode(reply["stderr"]))
        proc = subprocess.run([self.executable, *argv], input=stdin or b"", env=self.env, capture_output=True,
                              timeout=300, check=False)
        return Outcome(proc.returncode, proc.stdout, proc.stderr)

    def close(self) -> None:
        if self.server is not None:
            self.server.stdin.close()
            self.server.wait(timeout=30)
            self.server.stdout.close()
            self.server = None


def our_executable() -> str:
    candidate = Path(sys.executable).parent / "fgraph"
    return str(candidate) if candidate.exists() else "fgraph"


def differential_pair() -> tuple:
    """(ours, the peer, how many inputs, seed) for a differential test: FGRAPH_QUERIES (default
    300) and FGRAPH_QUERY_SEED (default 12); skips the test when FGRAPH_PEER is not set."""
    import pytest  # noqa: PLC0415 - only the differential tests need it

    peer = os.environ.get("FGRAPH_PEER") or None
    if peer is None:
        pytest.skip("FGRAPH_PEER is not set: the differential test needs the published runtime")
    total = int(os.environ.get("FGRAPH_QUERIES", "300"))
    seed = int(os.environ.get("FGRAPH_QUERY_SEED", "12"))
    return Runtime(our_executable(), "ours"), Runtime(peer, "peer"), total, seed


def same_rows(q: dict, ours: dict, theirs: dict) -> bool:
    """Whether two runtimes' answers to ``q`` agree: the same columns, and the same rows in the same order
    when ``q`` orders them, else as multisets."""
    if ours.get("columns") != theirs.get("columns"):
        return False
    if isinstance(q, dict) and q.get("order"):
        return ours == theirs
    key = lambda row: json.dumps(row, sort_keys=True)  # noqa: E731
    return sorted(map(key, ours["rows"])) == sorted(map(key, theirs["rows"]))
