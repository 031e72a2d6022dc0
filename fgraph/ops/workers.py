"""The one way fgraph runs work in a second process: a Python child started with ``-c CODE ARGS``
that answers with one JSON object per line on stdout.

The parent never trusts a child blindly: a child that could not start, died, printed something
that is not the expected object, or is no longer needed is killed and reaped, and the caller does
that work itself. So a worker can only make a command faster, never change its answer.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import orjson


def spawn(code: str, *args: str) -> subprocess.Popen | None:
    """Start ``python -P -c code args`` (``-c``, not ``-m``: the package imports its own worker
    modules, and runpy warns about that); None when it cannot start. ``-P``: ``-c`` would put the
    working directory first on ``sys.path``, so a ``fgraph/`` or ``orjson.py`` wherever the user
    happens to stand would run in the child instead of the installed package."""
    try:
        return subprocess.Popen([sys.executable, "-P", "-c", code, *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None


class LineChild:
    """A started child (or None); ``read(key)`` gives its next object, or None once it cannot be
    trusted, after which it is stopped and ``failed`` is set."""

    def __init__(self, proc: subprocess.Popen | None = None):
        self.proc = proc
        self.failed = False

    def read(self, key: str | None = None) -> dict | None:
        if self.failed or self.proc is None:
            return None
        try:
            found = orjson.loads(self.proc.stdout.readline())
        except (orjson.JSONDecodeError, OSError, ValueError):
            found = None
        if not isinstance(found, dict) or (key is not None and key not in found):
            return self.give_up()
        return found

    def give_up(self) -> None:
        self.failed = True
        self.stop()
        return None

    def stop(self) -> None:
        """Kill the child if it still runs, and reap it."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def answer(document: dict) -> None:
    """In the child: one answer line, flushed so the parent can use it at once."""
    out = sys.stdout.buffer
    out.write(orjson.dumps(document) + b"\n")
    out.flush()


def child_main(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """In the child: run ``main``; any failure is a non-zero exit the parent reads as "do it yourself"."""
    try:
        return main(argv)
    except Exception:  # noqa: BLE001 - the parent sees no answer and does the work itself
        return 1
