"""``fgraph tail`` (spec 04 §4, issue 49 item 1): the event stream, from ``--since`` or ``--after``,
following with ``--follow``, keeping its place in ``--cursor`` or ``--chain`` (docs/streams.md);
it registers itself on the ``cli`` group when imported (``COMMAND_HOMES``)."""

from __future__ import annotations

import os
import sys

import click

from fgraph.bridges import collect
from fgraph.cli.base import BUDGET_KEY, DB_KEY, TimeParam, cli, connect, db_option
from fgraph.cli.completion import PATH
from fgraph.cli.paths import resolve_db_path
from fgraph.core.limits import DEFAULT_QUERY_BUDGET, GENESIS_TX


@cli.command()
@db_option
@click.option("--since", type=TimeParam(), default=str(GENESIS_TX), show_default=True,
              help="Exclusive lower bound: a local tx id (one that is no transaction: after the last at or "
                   "below it), an event UUID, an RFC 3339 time or a duration such as 24h (before the first "
                   "transaction: from the beginning).")
@click.option("--follow/--no-follow", default=False, help="Keep streaming events as they commit.")
@click.option("--after", metavar="EVENT_UUID", help="Start after this event (the \"event\" of the last line "
              "collected): local, imported, applied or redacted alike.")
@click.option("--cursor", metavar="FILE", type=PATH, help="Resume after the event recorded in FILE, and record "
              "there each event once its line is flushed (a missing FILE: from --since/--after).")
@click.option("--chain", metavar="FILE", type=PATH, help="Append a BLAKE3 hash chain of the lines to FILE "
              "(verify-stream); an existing chain resumes after its last linked line.")
@click.option("--collected", metavar="FILE", type=PATH, help="The file the lines are appended to, checked "
              "on start against --chain or --cursor (default: stdout when it is a file).")
@click.pass_context
def tail(ctx, since, follow, after, cursor, chain, collected):
    """Stream committed events as canonical NDJSON.

    \b
    Example: fgraph --db agent.db tail --follow --cursor a.cursor >> a.ndjson
    """
    if after is not None and ctx.get_parameter_source("since") != click.core.ParameterSource.DEFAULT:
        raise click.UsageError("give --since or --after, not both")
    path, out = resolve_db_path(ctx.meta.get(DB_KEY), os.environ), sys.stdout.buffer
    with connect(path, read_only=True, query_budget=ctx.meta.get(BUDGET_KEY, DEFAULT_QUERY_BUDGET)) as db:
        if collect.keeps_place(after, cursor, chain, collected):
            collect.collect(db, out, since=since, after=after, follow=follow, cursor=cursor, chain=chain,
                            collected=collected)
            return
        for line in collect.lines(db, since, follow):
            out.write(line.encode("utf-8") + b"\n")
            if follow:
                out.flush()
    out.flush()
