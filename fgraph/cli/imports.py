"""The ``fgraph import`` command (issue 16); it registers itself on the ``cli`` group when imported."""

from __future__ import annotations

import sys

import click

from fgraph.bridges.importers import pipeline as importing
from fgraph.cli.completion import PATH
from fgraph.cli.base import RW, _print_result, _result, cli, common_options, provenance_options
from fgraph.bridges.add.data_source import open_data
from fgraph.cli.progress import progress


@cli.command("import")
@common_options
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["mcp-memory", "jsonl-log"]))
@click.argument("file", metavar="FILE", type=PATH)
@click.option("--batch-size", type=click.IntRange(1, importing.MAX_BATCH), default=importing.DEFAULT_BATCH,
              show_default=True, help="Records per all-or-nothing write.")
@click.option("--dry-run", is_flag=True, help="Check and count everything; write nothing.")
@click.option("--strict", is_flag=True, help="Refuse the whole file, writing nothing, if any line would be skipped.")
@click.option("--mirror", is_flag=True,
              help="mcp-memory: also retract this source's observations, relations and entities that FILE no "
                   "longer holds (history keeps them), in one all-or-nothing write; --batch-size does not apply.")
@provenance_options
@click.pass_context
def import_(ctx, fmt, file, batch_size, dry_run, strict, mirror, provenance=None):
    """Import another tool's memory file (FILE, or '-' for stdin), idempotently.

    FORMAT is mcp-memory (the MCP memory server's memory.jsonl) or jsonl-log (decision logs).
    Bad lines are skipped and listed with their numbers; re-importing changes nothing.
    With --mirror the source's facts follow FILE: what the server deleted is retracted.

    \b
    Example: fgraph --db team.db import mcp-memory memory.jsonl --by alice
    """
    given = provenance or {}
    job = importing.ImportJob(fmt, "stdin" if file == "-" else file, batch_size=batch_size, dry_run=dry_run,
                              strict=strict, by=given.get("by"), source=given.get("source"),
                              meta=given.get("meta"), has_meta="meta" in given, mirror=mirror)
    with open_data("-" if file == "-" else "@" + file, sys.stdin) as data:
        with progress(f"importing {job.origin}", unit="lines") as bar:
            result = _result(ctx, RW, lambda db: importing.run_import(db, job, data, on_line=lambda _: bar.advance()))
        _print_result(ctx, result)  # once the display is gone: the result starts on its own line
