"""``fgraph import FORMAT FILE``: other tools' memory files into a store, idempotently.

Every valid line becomes one event/1 record (``fgraph.bridges.import_formats``) and batches of
them are applied through the library (``Db.apply_summary``): each batch is one all-or-nothing
write, each record keeps its own ``by``, ``source`` (file and line) and time, and a record
imported before is recognised by its event UUID and counted, not written again.

Lines that are not records of the format are skipped and listed with their line numbers, as
these logs' own tools do; identical repeats of an earlier line are skipped too. The result is
a health summary ``{lines, imported, already_imported, skipped, corrupt, problems, ...}``.
``strict`` checks the whole file first and refuses it, writing nothing, when any line would be
skipped; ``dry_run`` applies everything and rolls it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from fgraph.core.canonical import dumps, loads
from fgraph.core.errors import FgraphError, NotFound, ValueTypeError
from fgraph.bridges import import_formats
from fgraph.bridges.data_source import BadLine, DataSource
from fgraph.bridges.import_formats import BadRecord

DEFAULT_BATCH, MAX_BATCH = 500, 10_000
PROBLEM_LIST_CAP = 100  # the counts stay exact; the list of problem lines is capped


class ImportJob:
    """The options of one import, checked before any database is opened."""

    def __init__(self, fmt: str, origin: str, *, batch_size: int = DEFAULT_BATCH, dry_run: bool = False,
                 strict: bool = False, by=None, source=None, meta=None, has_meta: bool = False):
        if fmt not in import_formats.FORMATS:
            raise ValueTypeError(f"import format {fmt!r} is unknown", "choose mcp-memory or jsonl-log")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
            raise ValueTypeError(f"batch size {batch_size!r} is out of range", f"use 1..{MAX_BATCH}")
        self.fmt, self.origin, self.batch_size = fmt, origin, batch_size
        self.dry_run, self.strict = dry_run, strict
        self.by, self.source_label = by, source or origin
        self.meta = meta if has_meta else None


def run_import(db, job: ImportJob, data: DataSource, *, on_line: Callable[[int], None] | None = None) -> dict:
    """Import ``data`` into ``db``; returns the health summary (see the module docstring)."""
    at = db.now()  # mcp-memory records carry no time: one reading stamps the whole run
    if job.strict:
        health = _Health()
        for _ in _events(job, data, at, health):
            pass
        if health.skipped or health.corrupt:
            first = health.problems[0]
            raise ValueTypeError(
                f"{job.origin}: {health.skipped + health.corrupt} of {health.lines} lines are not importable "
                f"(first: line {first['line']}, {first['reason']}); nothing was written",
                "fix those lines, or import without --strict to skip them")
    health = _Health()
    batch: list = []
    for number, event in _events(job, data, at, health):
        if on_line is not None:
            on_line(number)
        if _known(db, event["event"]):
            health.already_imported += 1
            continue
        batch.append((number, dumps(event)))
        if len(batch) == job.batch_size:
            _apply(db, job, batch, health)
            batch = []
    if batch:
        _apply(db, job, batch, health)
    return health.summary(db.latest_tx(), job)


class _Health:
    """What became of each line: the counts and the first problems, for the summary."""

    def __init__(self):
        self.lines = self.imported = self.already_imported = self.skipped = self.corrupt = self.batches = 0
        self.conflicts = 0  # only a dry run counts them; a real import stops at the first
        self.problems: list = []
        self.seen: dict = {}  # event UUID -> first line, to skip repeats inside one file

    def problem(self, number: int, kind: str, reason: str) -> None:
        if kind == "corrupt":
            self.corrupt += 1
        elif kind == "conflict":
            self.conflicts += 1
        else:
            self.skipped += 1
        if len(self.problems) < PROBLEM_LIST_CAP:
            self.problems.append({"line": number, "kind": kind, "reason": reason})

    def summary(self, basis_tx: int, job: ImportJob) -> dict:
        return {"format": job.fmt, "file": job.origin, "lines": self.lines, "imported": self.imported,
                "already_imported": self.already_imported, "skipped": self.skipped, "corrupt": self.corrupt,
                "problems": self.problems, "batches": self.batches, "basis_tx": basis_tx, "dry_run": job.dry_run,
                **({"conflicts": self.conflicts} if job.dry_run else {})}


def _events(job: ImportJob, data: DataSource, at: int, health: _Health) -> Iterator[tuple[int, dict]]:
    """``(line number, event)`` of every importable line; the others are noted in ``health``."""
    for number, line in data.lines_with_faults():  # blank lines are not yielded, but they are counted
        health.lines = number
        if isinstance(line, BadLine):   # undecodable or oversized: one bad line, not the end of the import
            health.problem(number, "corrupt", line.reason)
            continue
        try:
            record = loads(line)
        except FgraphError as exc:
            health.problem(number, "corrupt", exc.message)
            continue
        source = f"{job.source_label}:{number}"
        try:
            if job.fmt == "mcp-memory":
                event = import_formats.mcp_memory_event(record, at=at, source=source, by=job.by, meta=job.meta)
            else:
                event = import_formats.jsonl_log_event(record, source=source, by=job.by, meta=job.meta)
        except BadRecord as exc:
            health.problem(number, "corrupt", exc.reason)
            continue
        first = health.seen.setdefault(event["event"], number)
        if first != number:
            health.problem(number, "skipped", f"repeats line {first}")
            continue
        yield number, event
    health.lines = data.line_count   # trailing blank lines count too (docs/import.md)


def _known(db, event_id: str) -> bool:
    """Whether an earlier import (or any apply) already holds this record's event."""
    try:
        db.resolve({"eid": event_id})
    except NotFound:
        return False
    return True


def _apply(db, job: ImportJob, batch: list, health: _Health) -> None:
    try:
        summary = db.apply_summary((line for _, line in batch), dry_run=job.dry_run)
    except FgraphError as exc:
        number = batch[exc.line - 1][0] if exc.line is not None and exc.line <= len(batch) else None
        where = f"line {number}" if number is not None else "a batch"
        message = exc.message.split(": ", 1)[1] if exc.line is not None else exc.message
        raise type(exc)(f"{job.origin}: {where}: {message}; the batch with it was not written "
                        f"({health.imported} records before it were)", exc.hint) from None
    health.batches += 1
    # a dry run reports would-be applies as "new" and lists conflicts instead of raising
    health.imported += summary["new" if job.dry_run else "applied"] + summary["noop"]
    health.already_imported += summary["already_applied"]
    for conflict in summary.get("conflicts", ()):
        health.problem(batch[conflict["line"] - 1][0], "conflict", conflict["message"])
