"""The import pipeline: a format's items applied in batches, idempotently, with a health summary.

The format's importer (``registry``) turns the source into items, each a record's event/1 record
or a bad item with where it is; batches of the records are applied through the library
(``Db.apply_summary``): each batch is one all-or-nothing write, each record keeps its own ``by``,
``source`` (``LABEL:WHERE``, the file and line for a line-based format) and time, and a record
imported before is recognised by its event UUID and counted, not written again.

Bad items are skipped and listed with where they are (line numbers for a line-based format), as
these logs' own tools do; identical repeats of an earlier record are skipped too. The result is
a health summary ``{items, imported, already_imported, skipped, corrupt, problems, ...}``, with
``lines`` too for a line-based format. ``strict`` checks the whole source first and refuses it,
writing nothing, when any item would be skipped; ``dry_run`` applies everything and rolls it back.

``mirror`` (for the formats that support it; ``fgraph.bridges.importers.mirror``) also retracts
the facts of this source that the file no longer holds, in one write with the additions: the
file is read and planned at one basis (a bad item refuses the whole file), then read again
inside the write, which plans anew only if another writer committed in between. Nothing to
change means no write at all, as for a plain re-import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from fgraph.bridges.add.data_source import DataSource
from fgraph.bridges.importers import mirror as import_mirror
from fgraph.bridges.importers import registry
from fgraph.bridges.importers.items import BadItem, ImportContext, Where, describe
from fgraph.core.canonical import dumps
from fgraph.core.checks import strict_int
from fgraph.core.errors import FgraphError, FormatError, NotFound, ValueTypeError, rewrap
from fgraph.core.limits import IMPORT_BATCH, MAX_BATCH_SIZE

PROBLEM_LIST_CAP = 100  # the counts stay exact; the list of problems is capped
OnItem = Callable[[Where], None]


class ImportJob:
    """The options of one import, checked before any database is opened."""

    def __init__(self, fmt: str, origin: str, *, batch_size: int = IMPORT_BATCH, dry_run: bool = False,
                 strict: bool = False, by=None, source=None, meta=None, has_meta: bool = False,
                 mirror: bool = False, skip_bad: bool = False):
        self.importer = registry.importer(fmt)
        if mirror and "mirror" not in self.importer.options:
            raise ValueTypeError(f"--mirror is for {registry.choices(registry.supporting('mirror'))} files, not {fmt}",
                                 f"a {fmt} source is imported additively: import it without --mirror")
        if mirror and source is None and origin == "stdin":
            raise ValueTypeError("a mirror import from stdin needs a --source label",
                                 "name the source (--source LABEL) the same way every time: the label says "
                                 "which facts the file owns")
        strict_int(batch_size, "batch size {value!r} is out of range", "use {low}..{high}", low=1, high=MAX_BATCH_SIZE)
        self.fmt, self.origin, self.batch_size = fmt, origin, batch_size
        self.dry_run, self.strict, self.mirror, self.skip_bad = dry_run, strict, mirror, skip_bad
        self.by, self.source_label = by, source or origin
        self.meta = meta if has_meta else None

    def context(self, at: int) -> ImportContext:
        return ImportContext(at=at, label=self.source_label, by=self.by, meta=self.meta)


def run_import(db, job: ImportJob, data: DataSource, *, on_item: OnItem | None = None) -> dict:
    """Import ``data`` into ``db``; returns the health summary (see the module docstring).
    ``on_item(where)`` is called for each item read (progress)."""
    context = job.context(db.now())  # records that carry no time: one reading stamps the whole run
    if job.strict:
        health = _Health(job)
        for _ in _records(job, context, data, health):
            pass
        if health.skipped or health.corrupt:
            where, _, reason = health.problems[0]
            raise ValueTypeError(
                f"{job.origin}: {health.skipped + health.corrupt} of {health.extent()} are not importable "
                f"(first: {describe(where)}, {reason}); nothing was written",
                f"fix those {health.unit}, or import without --strict and with --skip-bad to leave them out")
    if job.mirror:
        return _run_mirror(db, job, context, data, on_item)
    health = _Health(job)
    relogs = job.importer.relogs(db) if hasattr(job.importer, "relogs") else None
    keys: set | None = set() if "mirror" in job.importer.options else None   # what the file holds, to compare
    batch: list = []
    for where, event in _records(job, context, data, health, on_item):
        if keys is not None:
            keys.update(import_mirror.event_keys(event))
        if _known(db, event["event"]):
            health.already_imported += 1
            continue
        if relogs is not None:
            event = relogs.event(event)
        batch.append((where, dumps(event)))
        if len(batch) == job.batch_size:
            _apply(db, job, batch, health)
            batch = []
    if batch:
        _apply(db, job, batch, health)
    summary = health.summary(db.latest_tx())
    if keys is not None:
        summary["not_in_file"] = import_mirror.disagreeing(db, job.source_label, keys)
    return summary


def drift_note(job: ImportJob, summary: dict) -> str | None:
    """The warning of a plain import whose source holds, in the store, records its file no longer
    has (``not_in_file``): how many, and that ``--mirror`` makes the store follow the file."""
    drift = summary.get("not_in_file", {}).get("records")
    if not drift:
        return None
    return (f"{job.origin}: {drift} record{'s' if drift != 1 else ''} of this source in the store no longer "
            f"agree{'s' if drift == 1 else ''} with the file ({summary['not_in_file']['facts']} facts the file "
            "does not hold); an import only adds, so the store keeps them: import with --mirror to make the "
            "store follow the file")


def dropped_error(job: ImportJob, summary: dict) -> FormatError | None:
    """The error an import that dropped records ends with (None when it dropped none, or ``skip_bad``):
    each dropped record named with where it is and why, up to five, and the counts."""
    if not summary["corrupt"] or job.skip_bad:
        return None
    unit = "lines" if job.importer.line_based else "items"
    named = [f"{'line ' + str(p['line']) if 'line' in p else p['at']}: {p['reason']}"
             for p in summary["problems"] if p["kind"] == "corrupt"][:5]
    more = "; …" if summary["corrupt"] > len(named) else ""
    return FormatError(
        f"{job.origin}: {summary['corrupt']} of {summary['items']} records were not imported "
        f"({'; '.join(named)}{more}); {summary['imported']} imported",
        f"fix those {unit} and import again (what was imported is recognised and not written twice), "
        "or pass --skip-bad to accept leaving them out")


class _Health:
    """What became of each item: the counts and the first problems, for the summary."""

    def __init__(self, job: ImportJob):
        self.job = job
        self.unit = "lines" if job.importer.line_based else "items"
        self.items = self.lines = self.imported = self.already_imported = self.skipped = self.corrupt = 0
        self.batches = 0
        self.conflicts = 0  # only a dry run counts them; a real import stops at the first
        self.problems: list[tuple[Where, str, str]] = []
        self.seen: dict = {}  # event UUID -> where it was first, to skip repeats inside one source

    def problem(self, where: Where, kind: str, reason: str) -> None:
        if kind == "corrupt":
            self.corrupt += 1
        elif kind == "conflict":
            self.conflicts += 1
        else:
            self.skipped += 1
        if len(self.problems) < PROBLEM_LIST_CAP:
            self.problems.append((where, kind, reason))

    def extent(self) -> str:
        """How much was read, for a message: ``18 lines`` (blank ones included) or ``7 items``."""
        return f"{self.lines if self.job.importer.line_based else self.items} {self.unit}"

    def summary(self, basis_tx: int) -> dict:
        job = self.job
        problems = [{"line" if isinstance(where, int) else "at": where, "kind": kind, "reason": reason}
                    for where, kind, reason in self.problems]
        return {"format": job.fmt, "file": job.origin, "items": self.items,
                **({"lines": self.lines} if job.importer.line_based else {}), "imported": self.imported,
                "already_imported": self.already_imported, "skipped": self.skipped, "corrupt": self.corrupt,
                "problems": problems, "batches": self.batches, "basis_tx": basis_tx, "dry_run": job.dry_run,
                **({"conflicts": self.conflicts} if job.dry_run else {})}


def _records(job: ImportJob, context: ImportContext, data: DataSource, health: _Health,
             on_item: OnItem | None = None) -> Iterator[tuple[Where, dict]]:
    """``(where, event)`` of every importable item; the others are noted in ``health``."""
    for item in job.importer.items(data, context):
        health.items += 1
        if on_item is not None:
            on_item(item.where)
        if isinstance(item, BadItem):
            health.problem(item.where, "corrupt", item.reason)
            continue
        first = health.seen.setdefault(item.event["event"], item.where)
        if first != item.where:
            health.problem(item.where, "skipped", f"repeats {describe(first)}")
            continue
        yield item.where, item.event
    if job.importer.line_based:
        health.lines = data.line_count   # the last line's number: blank lines count too (docs/import.md)


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
        where = describe(batch[exc.line - 1][0]) if exc.line is not None and exc.line <= len(batch) else "a batch"
        message = exc.message.split(": ", 1)[1] if exc.line is not None else exc.message
        raise rewrap(exc, message, before=f"{job.origin}: {where}: ",
                     after=f"; the batch with it was not written ({health.imported} records before it were)") from exc
    health.batches += 1
    # a dry run reports would-be applies as "new" and lists conflicts instead of raising
    health.imported += summary["new" if job.dry_run else "applied"] + summary["noop"]
    health.already_imported += summary["already_applied"]
    for conflict in summary.get("conflicts", ()):
        health.problem(batch[conflict["line"] - 1][0], "conflict", conflict["message"])


# ----------------------------------------------------------------- mirror

class _MirrorPlan:
    """What a mirror import writes, read at ``basis``: the items to write (``new``, or ``again``
    for a record imported before whose facts are not all live), how many records are imported and
    live already, and the facts of the source to retract, with their counts by kind."""

    def __init__(self, basis: int):
        self.basis = basis
        self.writes_at: dict[Where, str] = {}
        self.complete = 0
        self.retract: list = []
        self.counts = dict.fromkeys(import_mirror.RETRACTED_KINDS, 0)

    @property
    def writes(self) -> bool:
        return bool(self.writes_at or self.retract)


def _plan_mirror(db, job: ImportJob, context: ImportContext, data: DataSource, health: _Health,
                 on_item: OnItem | None = None) -> _MirrorPlan:
    plan = _MirrorPlan(db.latest_tx())
    keys: set = set()   # the file's fact keys, 16 bytes each: the one thing held per record of the file
    for where, event in _records(job, context, data, health, on_item):
        keys.update(import_mirror.event_keys(event))
        if not _known(db, event["event"]):
            plan.writes_at[where] = "new"
        elif import_mirror.holds_all(db, event):
            plan.complete += 1
        else:
            plan.writes_at[where] = "again"
    if health.corrupt:
        first = next(((where, reason) for where, kind, reason in health.problems if kind == "corrupt"), None)
        shown = f" (first: {describe(first[0])}, {first[1]})" if first is not None else ""
        raise ValueTypeError(
            f"{job.origin}: {health.corrupt} of {health.extent()} are not records of the format{shown}; "
            "nothing was written",
            f"a mirror retracts what the file does not hold, so it must read every record: fix those "
            f"{health.unit}, or import without --mirror and with --skip-bad to leave them out")
    plan.retract, plan.counts = import_mirror.retractions(db, job.source_label, keys)
    return plan


class _MirrorRun:
    """The event lines of a mirror import, made while ``Db.apply_summary`` reads them, that is
    inside its one write transaction: retractions first, then the records to write."""

    def __init__(self, db, job: ImportJob, context: ImportContext, data: DataSource, plan: _MirrorPlan):
        self.db, self.job, self.context, self.data, self.plan = db, job, context, data, plan
        self.places: list = []   # where each stream line's record is in the file (None: a retraction event)
        self.imported = self.again = 0

    def lines(self) -> Iterator[str]:
        job, context = self.job, self.context
        if self.db.latest_tx() != self.plan.basis:   # another writer came in between: plan again, under the lock
            self.plan = _plan_mirror(self.db, job, context, self.data, _Health(job))
        plan = self.plan
        for event in import_mirror.retraction_events(plan.retract, at=context.at, label=job.source_label,
                                                     basis=plan.basis, by=job.by, meta=job.meta):
            self.places.append(None)
            yield dumps(event)
        for where, event in _records(job, context, self.data, _Health(job)):
            status = plan.writes_at.get(where)
            if status is None:
                continue
            if status == "again":
                event = import_mirror.again(event, plan.basis)
                self.again += 1
            else:
                self.imported += 1
            self.places.append(where)
            yield dumps(event)

    def place(self, stream_line: int | None):
        """Where the record of one line of the applied stream is (None: a retraction event, or unknown)."""
        return self.places[stream_line - 1] if stream_line is not None and stream_line <= len(self.places) else None

    def failed(self, exc: FgraphError) -> FgraphError:
        where = self.place(exc.line)
        shown = describe(where) if where is not None else "retracting what the file no longer holds"
        message = exc.message.split(": ", 1)[1] if exc.line is not None else exc.message
        return rewrap(exc, message, before=f"{self.job.origin}: {shown}: ",
                      after="; nothing was written (a mirror import is one write)")


def _run_mirror(db, job: ImportJob, context: ImportContext, data: DataSource, on_item: OnItem | None) -> dict:
    health = _Health(job)
    with db.at(db.latest_tx()) as view:   # one basis for the whole plan, whoever writes meanwhile
        plan = _plan_mirror(view, job, context, data, health, on_item)
    run = _MirrorRun(db, job, context, data, plan)
    if plan.writes:
        try:
            summary = db.apply_summary(run.lines(), dry_run=job.dry_run)
        except FgraphError as exc:
            raise run.failed(exc) from exc
        health.batches = 1
        for conflict in summary.get("conflicts", ()):
            health.problem(run.place(conflict["line"]) or 0, "conflict", conflict["message"])
    health.imported, health.already_imported = run.imported, run.plan.complete
    return {**health.summary(db.latest_tx()), "mirror": True, "reasserted": run.again,
            "retracted": run.plan.counts}
