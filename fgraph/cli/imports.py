"""The ``fgraph import`` command (issue 16); it registers itself on the ``cli`` group when imported.

The FORMAT choice, the help's list of formats and its example are read from the import registry
when they are shown, so a format registered at run time is offered like a built-in one.
"""

from __future__ import annotations

import sys

import click

from fgraph.core.limits import IMPORT_BATCH, MAX_BATCH_SIZE
from fgraph.bridges.importers import pipeline as importing
from fgraph.bridges.importers import registry
from fgraph.cli.completion import PATH
from fgraph.cli.base import RW, cli, common_options, open_and_call, print_result, provenance_options
from fgraph.bridges.add.data_source import open_data
from fgraph.cli.progress import progress

_HELP_HEAD = "Import another tool's memory file (FILE, or '-' for stdin), idempotently."
_HELP_TAIL = ("Bad records are listed with where they are (line numbers for a line format) and why; the "
              "others are imported, and the command then fails unless --skip-bad accepts leaving them out. "
              "Re-importing changes nothing. With --mirror the source's facts follow FILE: what the tool "
              "deleted is retracted; without it, the summary counts what the store holds that FILE no "
              "longer does (not_in_file).")


def import_help() -> str:
    """The command's help: the registered formats with their description and example."""
    rows = []
    for name, importer in registry.FORMATS.items():
        mirror = " Supports --mirror." if "mirror" in importer.options else ""
        rows += [f"- {name}: {importer.description}{mirror}", f"  {importer.example}"]
    first = next(iter(registry.FORMATS.values()), None)
    example = f"\n\n\b\nExample: {first.example}" if first is not None else ""
    return "\n\n".join([_HELP_HEAD, "\b\nFORMAT is one of:\n" + "\n".join(rows), _HELP_TAIL]) + example


class _FormatChoice(click.Choice):
    """FORMAT: the registered format names, read each time they are needed (parse, usage, completion)."""

    def __init__(self):
        super().__init__(())

    @property
    def choices(self) -> tuple:
        return tuple(registry.FORMATS)

    @choices.setter
    def choices(self, _given) -> None:   # click's __init__ stores the choices; the registry holds them
        pass


class _ImportCommand(click.Command):
    """``import``, whose help is made from the registry when it is read."""

    @property
    def help(self) -> str:
        return import_help()

    @help.setter
    def help(self, _docstring) -> None:   # click's __init__ stores the docstring; the help is made instead
        pass


@cli.command("import", cls=_ImportCommand)
@common_options
@click.argument("fmt", metavar="FORMAT", type=_FormatChoice())
@click.argument("file", metavar="FILE", type=PATH)
@click.option("--batch-size", type=click.IntRange(1, MAX_BATCH_SIZE), default=IMPORT_BATCH,
              show_default=True, help="Records per all-or-nothing write.")
@click.option("--dry-run", is_flag=True, help="Check and count everything; write nothing.")
@click.option("--strict", is_flag=True, help="Refuse the whole file, writing nothing, if any record would be skipped.")
@click.option("--skip-bad", is_flag=True,
              help="Exit 0 even when some records are not records of the format (they are listed and left out).")
@click.option("--mirror", is_flag=True,
              help="For a format that supports it: also retract this source's facts that FILE no longer holds "
                   "(history keeps them), in one all-or-nothing write; --batch-size does not apply.")
@provenance_options
@click.pass_context
def import_(ctx, fmt, file, batch_size, dry_run, strict, skip_bad, mirror, provenance=None):
    given = provenance or {}
    job = importing.ImportJob(fmt, "stdin" if file == "-" else file, batch_size=batch_size, dry_run=dry_run,
                              strict=strict, by=given.get("by"), source=given.get("source"),
                              meta=given.get("meta"), has_meta="meta" in given, mirror=mirror,
                              skip_bad=skip_bad)
    with open_data("-" if file == "-" else "@" + file, sys.stdin) as data:
        with progress(f"importing {job.origin}", unit="items") as bar:
            result = open_and_call(ctx, RW,
                                   lambda db: importing.run_import(db, job, data, on_item=lambda _: bar.advance()))
        print_result(ctx, result)  # once the display is gone: the result starts on its own line
    note = importing.drift_note(job, result)
    if note is not None:
        click.echo(note, err=True)
    failure = importing.dropped_error(job, result)
    if failure is not None:
        raise failure
