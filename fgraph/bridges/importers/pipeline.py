"""``fgraph import FORMAT FILE``: other tools' memory files into a store, idempotently.

Every valid line becomes one event/1 record (``fgraph.bridges.importers.formats``) and batches of
them are applied through the library (``Db.apply_summary``): each batch is one all-or-nothing
write, each record keeps its own ``by``, ``source`` (file and line) and time, and a record
imported before is recognised by its event UUID and counted, not written again.

Lines that are not records of the format are skipped and listed with their line numbers, as
these logs' own tools do; identical repeats of an earlier line are skipped too. The result is
a health summary ``{lines, imported, already_imported, skipped, corrupt, problems, ...}``.
``strict`` checks the whole file first and refuses it, writing nothing, when any line would be
skipped; ``dry_run`` applies everything and rolls it back.

``mirror`` (mcp-memory only, ``fgraph.bridges.importers.mirror``) also retracts the facts of this
source that the file no longer holds, in one write with the additions: the file is read and
planned at one basis (a line that is not a record refuses the whole file), then read again
inside the write, which plans anew only if another writer committed in between. Nothing to
change means no write at all, as for a plain re-import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from fgraph.core.canonical import dumps, loads
from fgraph.core.errors import FgraphError, NotFound, ValueTypeError
from fgraph.bridges.importers import formats as import_formats
from fgraph.bridges.importers import mirror as import_mirror
from fgraph.bridges.add.data_source import BadLine, DataSource
from fgraph.bridges.importers.formats import BadRecord

DEFAULT_BATCH, MAX_BATCH = 500, 10_000
PROBLEM_LIST_CAP = 100  # the counts stay exact; the list of problem lines is capped


class ImportJob:
    """The options of one import, checked before any database is opened."""

    def __init__(self, fmt: str, origin: str, *, batch_size: int = DEFAULT_BATCH, dry_run: bool = False,
                 strict: bool = False, by=None, source=None, meta=None, has_meta: bool = False,
                 mirror: bool = False):
        if fmt not in import_formats.FORMATS:
            raise ValueTypeError(f"import format {fmt!r} is unknown", "choose mcp-memory or jsonl-log")
        if mirror and fmt != "mcp-memory":
            raise ValueTypeError(f"--mirror is for mcp-memory files, not {fmt}",
                                 "decision logs only grow: import them without --mirror")
        if mirror and source is None and origin == "stdin":
            raise ValueTypeError("a mirror import from stdin needs a --source label",
                                 "name the source (--source LABEL) the same way every time: the label says "
                                 "which facts the file owns")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
            raise ValueTypeError(f"batch size {batch_size!r} is out of range", f"use 1..{MAX_BATCH}")
        self.fmt, self.origin, self.batch_size = fmt, origin, batch_size
        self.dry_run, self.strict, self.mirror = dry_run, strict, mirror
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
    if job.mirror:
        return _run_mirror(db, job, data, at, on_line)
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


# ----------------------------------------------------------------- mirror

class _MirrorPlan:
    """What a mirror import writes, read at ``basis``: the lines to write (``new``, or ``again``
    for a line imported before whose facts are not all live), how many lines are imported and
    live already, and the facts of the source to retract, with their counts by kind."""

    def __init__(self, basis: int):
        self.basis = basis
        self.lines: dict[int, str] = {}
        self.complete = 0
        self.retract: list = []
        self.counts = dict.fromkeys(import_mirror.RETRACTED_KINDS, 0)

    @property
    def writes(self) -> bool:
        return bool(self.lines or self.retract)


def _plan_mirror(db, job: ImportJob, data: DataSource, at: int, health: _Health, on_line=None) -> _MirrorPlan:
    plan = _MirrorPlan(db.latest_tx())
    keys: set = set()   # the file's fact keys, 16 bytes each: the one thing held per line of the file
    for number, event in _events(job, data, at, health):
        if on_line is not None:
            on_line(number)
        keys.update(import_mirror.event_keys(event))
        if not _known(db, event["event"]):
            plan.lines[number] = "new"
        elif import_mirror.holds_all(db, event):
            plan.complete += 1
        else:
            plan.lines[number] = "again"
    if health.corrupt:
        first = next((p for p in health.problems if p["kind"] == "corrupt"), None)
        shown = f" (first: line {first['line']}, {first['reason']})" if first is not None else ""
        raise ValueTypeError(
            f"{job.origin}: {health.corrupt} of {health.lines} lines are not records of the format{shown}; "
            "nothing was written",
            "a mirror retracts what the file does not hold, so it must read every line: fix those lines, "
            "or import without --mirror to skip them")
    plan.retract, plan.counts = import_mirror.retractions(db, job.source_label, keys)
    return plan


class _MirrorRun:
    """The event lines of a mirror import, made while ``Db.apply_summary`` reads them, that is
    inside its one write transaction: retractions first, then the lines to write."""

    def __init__(self, db, job: ImportJob, data: DataSource, at: int, plan: _MirrorPlan):
        self.db, self.job, self.data, self.at, self.plan = db, job, data, at, plan
        self.numbers: list = []   # the file line of each stream line (None: a retraction event)
        self.imported = self.again = 0

    def lines(self) -> Iterator[str]:
        job = self.job
        if self.db.latest_tx() != self.plan.basis:   # another writer came in between: plan again, under the lock
            self.plan = _plan_mirror(self.db, job, self.data, self.at, _Health())
        plan = self.plan
        for event in import_mirror.retraction_events(plan.retract, at=self.at, label=job.source_label,
                                                     basis=plan.basis, by=job.by, meta=job.meta):
            self.numbers.append(None)
            yield dumps(event)
        for number, event in _events(job, self.data, self.at, _Health()):
            status = plan.lines.get(number)
            if status is None:
                continue
            if status == "again":
                event = import_mirror.again(event, plan.basis)
                self.again += 1
            else:
                self.imported += 1
            self.numbers.append(number)
            yield dumps(event)

    def failed(self, exc: FgraphError) -> FgraphError:
        number = self.numbers[exc.line - 1] if exc.line is not None and exc.line <= len(self.numbers) else None
        where = f"line {number}" if number is not None else "retracting what the file no longer holds"
        message = exc.message.split(": ", 1)[1] if exc.line is not None else exc.message
        return type(exc)(f"{self.job.origin}: {where}: {message}; nothing was written (a mirror import is one "
                         "write)", exc.hint)


def _run_mirror(db, job: ImportJob, data: DataSource, at: int, on_line) -> dict:
    health = _Health()
    with db.at(db.latest_tx()) as view:   # one basis for the whole plan, whoever writes meanwhile
        plan = _plan_mirror(view, job, data, at, health, on_line)
    run = _MirrorRun(db, job, data, at, plan)
    if plan.writes:
        try:
            summary = db.apply_summary(run.lines(), dry_run=job.dry_run)
        except FgraphError as exc:
            raise run.failed(exc) from None
        health.batches = 1
        for conflict in summary.get("conflicts", ()):
            health.problem(run.numbers[conflict["line"] - 1] or 0, "conflict", conflict["message"])
    health.imported, health.already_imported = run.imported, run.plan.complete
    return {**health.summary(db.latest_tx(), job), "mirror": True, "reasserted": run.again,
            "retracted": run.plan.counts}
