"""The CLI's plumbing (spec 09): the ``cli`` group, the options every command shares, and
``run_and_print``, which resolves the database path, opens it, makes one library call and prints the
result. The commands live in ``fgraph.cli.main`` (writes, reads, streams, operations) and
``fgraph.cli.questions`` (queries, schema, search); outcomes become exit codes in
``fgraph.cli.main.run``.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys

import click

from fgraph.core import settings
from fgraph.core.limits import DEFAULT_QUERY_BUDGET
from fgraph.core.canonical import dumps, loads
from fgraph.core.errors import FgraphError, rewrap
from fgraph.cli.completion import PATH
from fgraph.cli.paths import resolve_db_path
from fgraph.core.mappings import plain
from fgraph.core.timespec import EVENT_UUID, duration_us
from fgraph.version import __version__

RO, RW = "ro", "rw"
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPT, EXIT_PIPE = 0, 1, 2, 130, 141
DB_KEY, JSON_KEY, BUDGET_KEY = "fgraph.db", "fgraph.json", "fgraph.query_budget"


# ----------------------------------------------------------------- plumbing

def connect(path, **options):
    """``fgraph.connect``, imported when a command first opens a database: ``--help``, ``--version``
    and usage errors never load the engine (benchmarks/startup.py)."""
    from fgraph.db import connect as open_database
    return open_database(path, **options)


class Escaped(Exception):
    """Carries a broken pipe or Ctrl-C past click, which would turn them into exit 1 / "Aborted!"."""

    def __init__(self, original: BaseException):
        super().__init__(original)
        self.original = original


# Where the commands that fgraph.cli.main does not define itself are defined. A call loads the
# module of its own command only, and ``--help`` lists the summaries of fgraph.cli.help
# without loading any (benchmarks/startup.py); tests/cli/test_cli_conventions.py checks this table
# against what the modules register.
COMMAND_HOMES = {
    **dict.fromkeys(("context", "datoms", "explain", "q", "schema", "schema-apply", "schema-check", "schema-export",
                     "search", "shape", "validate"), "fgraph.cli.questions"),
    "import": "fgraph.cli.imports",
    "sync": "fgraph.cli.sync",
    "excise": "fgraph.cli.forget",
    "browse": "fgraph.cli.browse",
    "tail": "fgraph.cli.tail",
    "proposals": "fgraph.cli.proposals",
    **dict.fromkeys(("review", "render", "verify-stream"), "fgraph.cli.review"),
}
MAIN_MODULE = "fgraph.cli.main"


class _Group(click.Group):
    """The click group that maps every typed error to its message and exit code in one place, and
    loads each command's module when the command is first asked for.

    ``commands`` seen from outside (the reference generator, tests) is every command, all modules
    loaded; click's own lookups go through ``get_command``, which loads one."""

    def __init__(self, *args, **kwargs):
        self._registered: dict[str, click.Command] = {}
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> dict[str, click.Command]:
        for module in {MAIN_MODULE, *COMMAND_HOMES.values()}:
            importlib.import_module(module)
        for name in list(self._registered):
            self._conventional(name)
        return self._registered

    @commands.setter
    def commands(self, value) -> None:
        self._registered = dict(value or {})

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        self._registered[name or cmd.name] = cmd

    def list_commands(self, ctx) -> list[str]:
        from fgraph.cli.help import SUMMARIES
        return sorted(SUMMARIES)

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self._registered:
            importlib.import_module(COMMAND_HOMES.get(cmd_name, MAIN_MODULE))
        return self._conventional(cmd_name)

    def _conventional(self, name: str):
        command = self._registered.get(name)
        if command is not None:
            from fgraph.cli.help import apply_conventions
            apply_conventions(name, command)
        return command

    def format_commands(self, ctx, formatter) -> None:
        """The command list from the summaries, so that ``fgraph --help`` imports no command module."""
        from fgraph.cli.help import SUMMARIES
        with formatter.section("Commands"):
            formatter.write_dl([(name, SUMMARIES[name]) for name in self.list_commands(ctx)])

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (BrokenPipeError, KeyboardInterrupt) as exc:
            raise Escaped(exc) from None


def remember_in_meta(key: str):
    def callback(ctx: click.Context, param, value):
        if value is not None and value is not False:
            ctx.meta[key] = value  # meta is shared by the group's and the command's contexts
    return callback


def common_options(f):
    """``--db`` and ``--json``, accepted before and after the command name (the later one wins)."""
    f = click.option("--json", "json_output", is_flag=True, expose_value=False, callback=remember_in_meta(JSON_KEY),
                     help="Print canonical JSON on one line.")(f)
    return db_option(f)


def db_option(f):
    """``--db`` alone, for commands whose output is already JSON lines or is no output at all
    (tail, snapshot, mcp): ``--json`` after their name is a usage error, as in the published
    runtime; before it, the group accepts it for every command."""
    return click.option("--db", metavar="PATH", type=PATH, expose_value=False, callback=remember_in_meta(DB_KEY),
                        help="Database file [env FGRAPH_DB; default facts.fgraph].")(f)


def provenance_options(f):
    """``--by``, ``--source`` and ``--meta``, handed to the command as one ``provenance`` dict of
    the options given (``meta`` may be JSON null; absent means "not supplied")."""
    def collect(ctx: click.Context, param, value):
        if value is not None:
            given = ctx.params.setdefault("provenance", {})
            given[param.name] = parse_json_argument(value, "--meta") if param.name == "meta" else value
        return value
    f = click.option("--meta", metavar="JSON", expose_value=False, callback=collect,
                     help="Any JSON kept with the transaction (its event's meta).")(f)
    f = click.option("--source", metavar="TEXT", type=PATH, expose_value=False, callback=collect,
                     help="Where the change comes from (a file, a URL, a conversation).")(f)
    f = click.option("--by", metavar="WHO", envvar=settings.BY, show_envvar=True, expose_value=False,
                     callback=collect, help="Who makes the change.")(f)
    return f


def run_and_print(ctx: click.Context, mode: str, call) -> None:
    """Open the database read-only (RO) or writable (RW), apply ``call`` to it, print the result."""
    print_result(ctx, open_and_call(ctx, mode, call))


def open_and_call(ctx: click.Context, mode: str, call):
    """``run_and_print`` without the printing: for a command that prints once its progress display is gone."""
    path = resolve_db_path(ctx.meta.get(DB_KEY), os.environ)
    with connect(path, read_only=(mode == RO), query_budget=ctx.meta.get(BUDGET_KEY, DEFAULT_QUERY_BUDGET)) as db:
        return plain(call(db))


def print_result(ctx: click.Context, result) -> None:
    """A command's result: canonical JSON on one line with ``--json``, else indented for people."""
    write_line(dumps(result) if ctx.meta.get(JSON_KEY) else json.dumps(result, indent=2, sort_keys=True,
                                                                      ensure_ascii=False))


def run_and_write_text(ctx: click.Context, mode: str, call) -> None:
    """Like ``run_and_print`` for a call that returns text meant for people (or a prompt): printed as it is."""
    path = resolve_db_path(ctx.meta.get(DB_KEY), os.environ)
    with connect(path, read_only=(mode == RO), query_budget=ctx.meta.get(BUDGET_KEY, DEFAULT_QUERY_BUDGET)) as db:
        text = call(db)
    write_line(text)


def write_line(text: str) -> None:
    """One line of UTF-8 on stdout, whatever the locale says."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (embedding, some test harnesses)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    sys.stdout.flush()
    buffer.write(text.encode("utf-8") + b"\n")
    buffer.flush()


def parse_ref(text: str):
    """A REF argument: an integer id when ``int()`` reads it (as the published CLI does), else a name."""
    try:
        return int(text)
    except ValueError:
        return text


def resolve_loose_ref(view, text: str):
    """A REF to read by: a name may differ from the entity's in case (issue 30 item 2)."""
    ref = parse_ref(text)
    return view.resolve(ref, loose=True) if isinstance(ref, str) else ref


def stdout_is_terminal() -> bool:
    """Whether a person reads the output: readable extras go there, never into a pipe or a file
    (which keep the published bytes)."""
    from fgraph.cli.progress import is_terminal
    return is_terminal(sys.stdout)


def parse_json_argument(text: str, what: str):
    try:
        return loads(text)
    except FgraphError as exc:
        raise rewrap(exc, before=f"{what} is not valid JSON: ") from exc


def flag_pair(ctx: click.Context, on: bool, off: bool, on_name: str, off_name: str) -> bool | None:
    if on and off:
        raise click.UsageError(f"{on_name} and {off_name} are mutually exclusive", ctx)
    return True if on else False if off else None


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN, which compares false against both bounds and so
    slips through a plain range check."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


#: --at of every read that takes a view (get, history, q, explain, datoms)
AT_HELP = ("Read as of a transaction id (an integer: the transaction, else a µs instant, as published), an event "
           "UUID, an RFC 3339 time or a duration before now (90m, 24h, 7d; one before the first transaction reads "
           "the empty beginning, transaction 64).")


class TimeParam(click.ParamType):
    """``--at``, ``--since``: an integer (a transaction id; for ``--at`` also the published µs
    instant) or text: an event UUID, an RFC 3339 time or a duration (core/timepoints resolves it)."""

    name = "TX"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return int(value)
        except ValueError:
            if value.strip().lstrip("+-").isdigit():
                self.fail(f"{value[:40]!r}... is too long for an integer", param, ctx)
            return value


class WhenParam(TimeParam):
    """A point in time checked while parsing: an integer, an event UUID, an RFC 3339 time or a
    duration (``24h``); anything else is a usage error, as a non-integer was when the argument took
    only integers."""

    name = "TX|TIME"

    def convert(self, value, param, ctx):
        value = super().convert(value, param, ctx)
        if isinstance(value, str) and duration_us(value) is None and not EVENT_UUID.fullmatch(value.strip()):
            from fgraph.core.values import parse_instant  # the value codecs load hashlib: not for --help
            try:
                parse_instant(value)
            except FgraphError:
                self.fail(f"{value[:60]!r} is not a transaction id, an event UUID, an RFC 3339 time or a duration "
                          "such as 24h",
                          param, ctx)
        return value


# ----------------------------------------------------------------- commands

def _show_version(ctx: click.Context, param, wanted: bool):
    """``fgraph --version``: what ``fgraph version`` prints (click's own version option would also
    load the locale machinery on every start)."""
    if wanted and not ctx.resilient_parsing:
        write_line(__version__)
        ctx.exit(0)


def _show_completion(ctx: click.Context, param, shell):
    """Print the completion script of ``shell`` (click's own) and stop."""
    if shell is None or ctx.resilient_parsing:
        return
    from click.shell_completion import get_completion_class
    script = get_completion_class(shell)(ctx.command, {}, "fgraph", settings.COMPLETE).source()
    write_line(script.rstrip("\n"))
    ctx.exit(0)


@click.group(cls=_Group, context_settings={"max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
              help="Print the version and exit.")
@click.option("--show-completion", type=click.Choice(["bash", "zsh", "fish"]), expose_value=False, is_eager=True,
              callback=_show_completion, metavar="SHELL",
              help="Print the completion script for bash, zsh or fish, e.g. "
                   "eval \"$(fgraph --show-completion bash)\" in ~/.bashrc.")
@common_options
@click.option("--query-budget", type=int, envvar=settings.QUERY_BUDGET, show_envvar=True, metavar="N",
              expose_value=False, callback=remember_in_meta(BUDGET_KEY),
              help=f"Work-unit budget for queries [default {DEFAULT_QUERY_BUDGET}].")
def cli():
    """Temporal facts in one SQLite file."""
