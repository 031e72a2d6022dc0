"""Driving any runtime's ``fgraph`` executable on a temporary file database (spec 09)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import urllib.parse
from typing import Any

from .adapter import Adapter, excise_report, facts_rows
from .cases import ERROR_NAMES, EVENT_SEED, GENESIS_AT, INFO_EXTENSION_KEYS, WRITE_ACTIONS
from .cli_args import CLI_COMMANDS, Command, int_arg, short_args
from .encoding import loads_strict, parse_ndjson
from .outcomes import CaseFormatError, NotExpressible, RuntimeCrash, StepError

_ERROR_LINE = re.compile(r"^([A-Za-z]+): ")
#: the only reads the CLI can make inside an ``at`` view (``get --at``, ``q --at``)
VIEW_ACTIONS = ("entity", "q")


def _without_info_extensions(info: Any) -> Any:
    if isinstance(info, dict):  # this runtime's info adds the latest transaction (docs/cli.md)
        for key in INFO_EXTENSION_KEYS:
            info.pop(key, None)
    return info


#: what is done to a command's output before it is matched
RESULT_FILTERS = {"stats": _without_info_extensions, "excise": excise_report}


class CliAdapter(Adapter):
    """Drives a runtime's ``fgraph`` executable on a temporary file database.

    Environment: ``FGRAPH_CLOCK=1767225600000000`` and the event seed; the
    constant clock plus the monotonic rule (03 §8) give the library clock's
    times. Every command runs with ``--db FILE --json``.
    """

    #: CLI commands never compare the file size (``stats.size``)
    IGNORED_STATS_KEYS = ("size",)

    def __init__(self, executable: str | os.PathLike[str] | list[str], label: str = "cli",
                 timeout: float = 120.0, add_options: tuple[str, ...] = (), excise_options: tuple[str, ...] = ()):
        if isinstance(executable, (list, tuple)):
            self.command = [str(part) for part in executable]
        elif os.path.exists(str(executable)):
            self.command = [str(executable)]
        else:
            self.command = shlex.split(str(executable))
        self.label = label
        self.timeout = timeout
        # given to every `add` without --batch-size: what a runtime needs to print the published
        # output of NDJSON (ours: --reports, decision A3 in docs/cli.md)
        self.add_options = tuple(add_options)
        # given to every `excise`: what a runtime needs to print the published receipt, erased values
        # and all (ours: --published-receipt, decision F6 in docs/forgetting.md)
        self.excise_options = tuple(excise_options)
        self.tmpdir: str | None = None
        self.path: str | None = None
        self.initialized = False
        self.invocations = 0
        env = dict(os.environ)
        for key in ("FGRAPH_DB", "FGRAPH_QUERY_BUDGET"):
            env.pop(key, None)
        env["FGRAPH_CLOCK"] = str(GENESIS_AT)
        env["FGRAPH_EVENT_SEED"] = EVENT_SEED
        self.env = env

    # -- lifecycle
    def start(self) -> None:
        self.tmpdir = tempfile.mkdtemp(prefix="fgraph-conformance-")
        self.path = os.path.join(self.tmpdir, "case.fgraph")
        self.initialized = False

    def stop(self) -> None:
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
        self.tmpdir = self.path = None

    def root(self) -> Any:
        return None  # None = the live database; an int = the --at view

    # -- process
    def run(self, args: list[str], *, write: bool, stdin: bytes | None = None,
            ndjson: bool = False) -> Any:
        """Run one command; return its parsed JSON output (a list of records when
        ``ndjson``) or raise StepError/RuntimeCrash."""
        if not write and not self.initialized:
            self._invoke(["init"])
            self.initialized = True
        result = self._invoke(args, stdin=stdin, ndjson=ndjson)
        if write:
            self.initialized = True
        return result

    def _invoke(self, args: list[str], *, stdin: bytes | None = None, ndjson: bool = False) -> Any:
        assert self.path is not None, "adapter not started"
        argv = [*self.command, "--db", self.path, "--json", *args]
        self.invocations += 1
        proc = subprocess.run(argv, env=self.env, cwd=self.tmpdir, capture_output=True,
                              input=stdin, timeout=self.timeout, check=False)
        stdout = proc.stdout.decode("utf-8", errors="replace")
        stderr = proc.stderr.decode("utf-8", errors="replace")
        if proc.returncode == 0:
            if ndjson:
                try:
                    return parse_ndjson(proc.stdout.decode("utf-8"))
                except (ValueError, CaseFormatError) as exc:
                    raise RuntimeCrash(f"`{short_args(args)}` printed a bad NDJSON stream "
                                       f"({exc})") from None
            try:
                return loads_strict(stdout)
            except (ValueError, CaseFormatError) as exc:
                raise RuntimeCrash(f"`{short_args(args)}` printed non-JSON output "
                                   f"({exc}): {stdout[:500]!r}") from None
        first = stderr.splitlines()[0] if stderr else ""
        found = _ERROR_LINE.match(first)
        if proc.returncode == 1 and found and found.group(1) in ERROR_NAMES:
            raise StepError(found.group(1), first[found.end():])
        tail = [line for line in stderr.splitlines() if line.strip()][-3:]
        raise RuntimeCrash(f"`{short_args(args)}` exited {proc.returncode}: "
                           + " | ".join(tail))

    def _spill(self, text: str, stem: str) -> str:
        """An argument too long (or too ambiguous) for argv, written to a file for ``@PATH``."""
        assert self.tmpdir is not None
        path = os.path.join(self.tmpdir, f"{stem}-{self.invocations}.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    # -- steps
    def view(self, ctx: Any, value: Any, step: dict[str, Any]) -> Any:
        if ctx is not None:
            raise NotExpressible("nested 'at' (the CLI has one --at per command)")
        at = int_arg(value, "at value")  # the CLI's --at takes integers only
        if "error" in step:
            # Resolve the view through a read that cannot fail otherwise: system
            # identity 1 exists at every basis.
            self.run(["get", f"--at={at}", "1"], write=False)
        # Nested steps other than `entity` (and `facts`) are skipped one by one.
        return int(at)

    def perform(self, ctx: Any, action: str, step: dict[str, Any]) -> Any:
        if action == "facts":
            if not self.initialized:
                self.run(["init"], write=True)
            return self._facts()
        if ctx is not None and action not in VIEW_ACTIONS:
            what = "a write" if action in WRITE_ACTIONS else f"{action!r}"
            raise NotExpressible(f"{what} inside 'at' (only `get --at` and `q --at` exist)")
        build = CLI_COMMANDS.get(action)
        if build is None:
            raise NotExpressible(f"action {action!r} has no CLI form")
        command: Command = build(step[action], step, ctx, self._spill)
        args = command.args
        if args[:1] == ["add"] and not any(a.startswith("--batch-size") for a in args):
            args = ["add", *self.add_options, *args[1:]]
        if args[:1] == ["excise"]:
            args = ["excise", *self.excise_options, *args[1:]]
        result = self.run(args, write=command.write, stdin=command.stdin, ndjson=command.ndjson)
        keep = RESULT_FILTERS.get(action)
        return keep(result) if keep else result

    def _facts(self) -> list[list[Any]]:
        assert self.path is not None
        uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
        try:
            import apsw  # noqa: PLC0415 - lazy: only this step needs it
        except ImportError:
            import sqlite3  # noqa: PLC0415

            connection = sqlite3.connect(uri, uri=True)
            try:
                return facts_rows(connection)
            finally:
                connection.close()
        connection = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        try:
            return facts_rows(connection)
        finally:
            connection.close()

    def normalize(self, action: str, expected: Any, actual: Any) -> tuple[Any, Any]:
        if action == "stats" and isinstance(expected, dict) and isinstance(actual, dict):
            expected = {k: v for k, v in expected.items() if k not in self.IGNORED_STATS_KEYS}
            actual = {k: v for k, v in actual.items() if k not in self.IGNORED_STATS_KEYS}
        return expected, actual
