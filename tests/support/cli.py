"""The one way tests run the fgraph CLI.

``run_cli`` runs the installed entry point in a child process: real argv, stdin, stdout, stderr
and exit status. ``invoke_cli`` runs it in this process through ``fgraph.cli.main.run`` (the real
entry point, error mapping included) for tests that need speed or monkeypatching.
``run_cli_on_terminal`` gives the child a pseudo-terminal for stderr, where progress is drawn.
tests/test_house_rules.py fails on a test module that spawns the CLI through its own helper.
"""

from __future__ import annotations

import json as jsonlib
import os
import pty
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple, Sequence

from tests.support.constants import CONFORMANCE_CLOCK, CONFORMANCE_SEED

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
DETERMINISTIC = {"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": CONFORMANCE_SEED}
# Settings a test's own environment may carry that would change what a CLI call does.
CALL_SETTINGS = ("FGRAPH_DB", "FGRAPH_DEBUG", "FGRAPH_QUERY_BUDGET")


def interruptible() -> None:
    """``preexec_fn`` for a child a test will stop with SIGINT, as Ctrl-C at a terminal would.

    A shell running a command in the background without job control hands it SIGINT ignored (POSIX),
    a test run started that way passes it on, and Python keeps an ignored SIGINT: the child would
    never see the interrupt the test sends. At a terminal SIGINT has its default, so give it that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class CliResult(NamedTuple):
    """What one CLI call ended with; unpacks as ``code, out, err``."""

    returncode: int
    stdout: str | bytes
    stderr: str | bytes


def run_cli(*args, db=None, json: bool = False, input: str | bytes | None = None, env: dict | None = None,
            cwd=None, text: bool = True, timeout: float | None = 120, check: bool = False,
            executable: str | Sequence[str] = FGRAPH, **options) -> CliResult:
    """``fgraph [--db DB] [--json] ARGS`` in a child process, its output captured.

    ``env`` is the child's whole environment, as for ``subprocess.run`` (None: this process's);
    ``text`` decodes the output (and takes ``input`` as text); ``check`` fails the test on a non-zero
    exit, with stderr as the message; ``executable`` is another runtime's executable, or a command
    (``[sys.executable, "-m", "fgraph.cli.main"]``); ``options`` go to ``subprocess.run`` as they are
    (``preexec_fn`` for a resource limit)."""
    command = [executable] if isinstance(executable, (str, os.PathLike)) else list(executable)
    command = [str(part) for part in command]
    if db is not None:
        command += ["--db", str(db)]
    if json:
        command.append("--json")
    command += [str(arg) for arg in args]
    proc = subprocess.run(command, input=input, env=env, cwd=cwd, capture_output=True, text=text, timeout=timeout,
                          **options)
    if check:
        assert proc.returncode == 0, proc.stderr
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def run_cli_json(db, *args, seed: str, stdin: bytes | None = None, **env) -> tuple[int, object, str]:
    """``fgraph --db DB --json ARGS`` through ``run_cli`` in an environment of only the conformance clock,
    the event ``seed`` and ``env``: (exit code, the output parsed, None when there is none, stderr)."""
    code, out, err = run_cli(*args, db=db, json=True, input=stdin, text=False,
                             env={"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": seed, **env})
    out = out.decode()
    return code, (jsonlib.loads(out) if out.strip() else None), err.decode()


def clean_env(**extra) -> dict:
    """This process's environment without the settings a call must not inherit, with the conformance
    clock and seed, and ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in CALL_SETTINGS}
    env.update(DETERMINISTIC)
    env.update(extra)
    return env


def invoke_cli(args, input=None, **env) -> tuple[int, str, str]:
    """Run the CLI in-process through ``cli.run`` (the real entry point, error mapping included), with the
    conformance clock and seed and no inherited ``CALL_SETTINGS``; ``env`` overrides variables."""
    from click.testing import CliRunner  # only the in-process tests need click's test harness

    from fgraph.cli import main as cli
    overrides = {**dict.fromkeys(CALL_SETTINGS), **DETERMINISTIC, **env}
    with CliRunner().isolation(input=input, env=overrides) as (out, err, _):
        code = cli.run([str(a) for a in args])
    return code, out.getvalue().decode(), err.getvalue().decode()


def run_cli_on_terminal(args, *, cwd, env: dict, executable: str = FGRAPH) -> tuple[int, bytes, bytes]:
    """The CLI with stdout piped and stderr a pseudo-terminal: (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([executable, *args], stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            env=env, cwd=cwd)
    os.close(slave)
    out = proc.stdout.read()
    proc.stdout.close()
    err = b""
    while select.select([master], [], [], 1.0)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    return proc.wait(timeout=60), out, err


def run_clean(args, cwd, input: bytes | None = None, executable: str = FGRAPH, **env) -> CliResult:
    """``run_cli`` of ``args`` in ``cwd`` with ``clean_env(**env)``, the output as bytes."""
    return run_cli(*args, cwd=cwd, input=input, env=clean_env(**env), text=False, executable=executable)
