"""The bodies of the long commands (add, apply, restore, backup, restore-backup): each works inside
a progress display (``fgraph.cli.progress``, on a terminal only) and prints its result after the
display is gone, so the result starts on a line of its own (issue 31 item 2).

``add`` of NDJSON prints a summary unless ``--reports`` asks for every report (decision A3 in
docs/cli.md); the reports are then rendered one by one into a spool (memory up to
``SPOOL_IN_MEMORY``, then a temporary file) and printed as the one JSON array the published
runtime prints, once the last record has committed — nothing if one fails, as published.
"""

from __future__ import annotations

import json
import shutil
import sys

import click

import fgraph
from fgraph.bridges import reviewing
from fgraph.bridges.add import ingest
from fgraph.bridges.add.data_source import open_data
from fgraph.cli.base import JSON_KEY, RO, RW, print_result, open_and_call
from fgraph.cli.progress import progress, reading
from fgraph.core.canonical import dumps
from fgraph.core.errors import FgraphError
from fgraph.core.mappings import plain

SPOOL_IN_MEMORY = 1 << 20


class ReportSpool:
    """Reports rendered as they come, printed as one JSON array: byte for byte what printing the
    list would give (canonical on one line, or indented for people), in bounded memory."""

    def __init__(self, canonical: bool):
        import tempfile
        self._canonical = canonical
        self._file = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, prefix="fgraph-reports-")
        self.count = 0

    def add(self, report) -> None:
        report = plain(report)
        if self._canonical:
            text = ("," if self.count else "") + dumps(report)
        else:
            item = json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False)
            text = (",\n" if self.count else "") + "\n".join("  " + line for line in item.split("\n"))
        self._file.write(text.encode("utf-8"))
        self.count += 1

    def write_to(self, out) -> None:
        """The array and a newline on the binary stream ``out``."""
        if not self.count:
            out.write(b"[]\n")
        else:
            out.write(b"[" if self._canonical else b"[\n")
            self._file.seek(0)
            shutil.copyfileobj(self._file, out)
            out.write(b"]\n" if self._canonical else b"\n]\n")
        out.flush()

    def close(self) -> None:
        self._file.close()


def add(ctx: click.Context, data: str, *, reports: bool, **options) -> None:
    """``fgraph add``: check, then write with progress; print the report, the batch summary, the
    NDJSON summary or (``reports``) every report."""
    if reports and options.get("batch_size") is not None:
        raise click.UsageError("--reports lists the reports of NDJSON records; --batch-size prints its own "
                               "summary", ctx)
    spool = ReportSpool(canonical=bool(ctx.meta.get(JSON_KEY))) if reports else None
    try:
        # inline DATA is one short argument: no display flickers for it
        with open_data(data, sys.stdin) as source, \
                progress("adding", unit="lines", enabled=data == "-" or data.startswith("@")) as bar:
            bar.phase("checking", unit="lines")
            job = ingest.prepare(source, on_line=bar.advance, **options)
            bar.phase("writing", total=job.count, unit="records")
            listed = spool is not None and not job.single
            result = open_and_call(ctx, RW, lambda db: job.execute(db, on_report=spool.add if listed else None,
                                                                   on_written=bar.advance))
        if listed:
            _flush_stdout()
            spool.write_to(sys.stdout.buffer)
        else:
            print_result(ctx, result)
    finally:
        if spool is not None:
            spool.close()


def apply(ctx: click.Context, src: str, dry_run: bool, expect_digest: str | None = None) -> None:
    """``apply``; with ``--dry-run`` the report, then the exit (and error) apply would give."""
    with ingest.open_stream(src, sys.stdin) as handle:
        with reading(reviewing.expecting(handle, expect_digest), "applying", items="events",
                     then="committing") as counted:
            try:
                result = open_and_call(ctx, RW, lambda db: db.apply_summary(counted, dry_run=dry_run))
            except FgraphError as exc:
                raise (reviewing.apply_refusal(error=exc) if dry_run else exc) from None
        print_result(ctx, result)
    refused = reviewing.apply_refusal(result) if dry_run else None
    if refused is not None:
        raise refused


def restore(ctx: click.Context, src: str) -> None:
    with ingest.open_stream(src, sys.stdin) as handle:
        with reading(handle, "restoring", items="records", then="verifying") as counted:
            result = open_and_call(ctx, RW, lambda db: db.restore(counted, details=True))
        print_result(ctx, result)


def backup(ctx: click.Context, dest: str) -> None:
    with progress(f"backing up to {dest}", unit="") as bar:
        result = open_and_call(ctx, RO, lambda db: db.backup(dest, details=True, on_phase=bar.stage))
    print_result(ctx, result)


def restore_backup(ctx: click.Context, backup_file: str, dest: str) -> None:
    with progress(f"restoring {backup_file}", unit="") as bar:
        with fgraph.restore_backup(backup_file, dest, on_phase=bar.stage) as db:
            bar.stage(f"digest of {dest}")
            result = {"basis_tx": db.latest_tx(), "digest": db.logical_digest(), "path": dest}
    print_result(ctx, result)


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
