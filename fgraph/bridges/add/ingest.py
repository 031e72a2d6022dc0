"""The library behind ``fgraph add``: one JSON document, NDJSON, or batches (spec 09 §4.1).

Two steps, so that a caller can reject bad input before it opens a database
(the published CLI reports input errors first):

- ``prepare(text, ...)`` parses and checks everything that needs no database
  and returns an ``AddJob``;
- ``add(db, job)`` (or ``add(db, text, ...)``, which prepares first) runs it:
  one transaction for a single document, one per NDJSON record, or one per
  batch of ``batch_size`` records.

``read_data_argument`` turns the CLI's DATA argument (inline, ``@path``, ``-``)
into text.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterable, Iterator
from typing import IO

from fgraph.core.canonical import loads
from fgraph.core.checks import optional_int
from fgraph.core.errors import FgraphError, ValueTypeError, rewrap
from fgraph.core.files import open_regular_input
from fgraph.core.limits import MAX_BATCH_SIZE
from fgraph.bridges.add.data_source import DataSource, read_bounded_text, text_lines

INPUT_HINT = "provide JSON inline, via @file, or on stdin with '-'"
PATH_OR_JSON_HINT = "pass a file path, @file, inline JSON or - for stdin"


# ----------------------------------------------------------------- reading DATA

def read_data_argument(arg: str, stdin: IO) -> str:
    """The text of DATA: ``-`` reads ``stdin``, ``@path`` a UTF-8 file, anything else is the text itself.

    Line ends are kept as they are (no universal-newline translation): records are split on LF
    only and a CR is ordinary JSON whitespace. Over the document cap ⇒ TooLarge while reading.
    """
    return read_bounded_text(arg, stdin)


def read_json_argument(arg: str, stdin: IO, what: str):
    """One JSON document (a schema/1 manifest) given inline, as ``@path`` or ``-``, as the published
    runtime takes it, or (ours, issue 31) as a plain path like every other command's file: text
    that is not JSON and names an existing regular file is read as ``@path``. Inline JSON wins, so
    nothing the published runtime accepts is read differently (docs/schema.md)."""
    try:
        return loads(read_data_argument(arg, stdin))
    except FgraphError as exc:
        if not isinstance(exc, ValueTypeError) or arg == "-" or arg.startswith("@"):
            if isinstance(exc, ValueTypeError):
                raise ValueTypeError(f"{what} is not valid JSON: {exc.message}", exc.hint) from None
            raise
        if os.path.isfile(arg):
            return read_json_argument("@" + arg, stdin, f"{what} file {arg}")
        raise ValueTypeError(f"{what} is neither valid JSON nor a file: {exc.message}", PATH_OR_JSON_HINT) from None


# ----------------------------------------------------------------- parsing

def parse_records(text: str) -> tuple[list, bool]:
    """``([document], True)`` for one JSON document, else ``(records, False)`` for NDJSON.

    Surrounding whitespace (Python's notion, as in the published runtime) is
    ignored around the text and around each record. Every NDJSON record is
    parsed before anything is written; the first bad one raises with its
    (1-based, physical) line number.
    """
    stripped = text.strip()
    if not stripped:
        raise ValueTypeError("add input is empty", INPUT_HINT)
    try:
        return [loads(stripped)], True
    except ValueTypeError as whole:
        first_error = whole
    records: list = []
    for number, line in text_lines(text):
        try:
            records.append(loads(line))
        except FgraphError as exc:
            if not records and isinstance(exc, ValueTypeError):
                break  # the first line is not JSON either: report the document's own error
            raise rewrap(exc, before=f"add input line {number}: ") from exc
    if len(records) < 2:
        raise ValueTypeError(f"add input: {first_error.message}",
                             first_error.hint or "correct the JSON syntax")
    return records, False


# ----------------------------------------------------------------- the job

class AddJob:
    """Parsed ``add`` input plus its options, checked as far as possible without a database.

    ``records`` is the parsed input when it was small enough to hold; a streamed job instead
    re-reads its ``source`` (already checked line by line) and holds one batch at a time.
    """

    def __init__(self, records: list | None, single: bool, *, operation_id=None, operation_id_prefix=None,
                 batch_size=None, if_basis_tx=None, source: DataSource | None = None, count: int | None = None,
                 provenance: dict | None = None):
        self.records, self.single, self.source = records, single, source
        self.provenance = dict(provenance or {})  # by, source, meta: the same on every transaction
        self.count = len(records) if records is not None else count
        self.operation_id, self.operation_id_prefix = operation_id, operation_id_prefix
        self.batch_size, self.if_basis_tx = batch_size, if_basis_tx

    def iter_records(self) -> Iterator:
        for _, record in self._numbered_records():
            yield record

    def _numbered_records(self) -> Iterator[tuple[int, object]]:
        """(item number, record); a streamed job parses each line as it is reached."""
        if self.records is not None:
            yield from enumerate(self.records, 1)
        else:
            yield from enumerate((record for _, record in _parsed_lines(self.source)), 1)

    def _located_records(self) -> Iterator[tuple[str, object]]:
        """("line N", record) with the input's physical line numbers; ("record N", record) for a job
        made from parsed records."""
        if self.records is not None:
            for number, record in enumerate(self.records, 1):
                yield f"record {number}", record
        else:
            for number, record in _parsed_lines(self.source):
                yield f"line {number}", record

    def run(self, db):
        """A report (one document), a batch summary, or the list of every NDJSON record's report."""
        if self.batch_size is not None or self.single:
            return self.execute(db)
        reports: list = []
        self.execute(db, on_report=reports.append)
        return reports

    def execute(self, db, *, on_report=None, on_written=None):
        """Run the job in memory bounded by one batch: a report (one document), a batch summary, or
        for NDJSON the summary ``{applied, basis_tx, last_tx, noop, transactions}``, each record's
        report handed to ``on_report`` and none kept (decision A3, docs/cli.md). ``on_written(n)``
        is told after each transaction how many records it wrote (progress)."""
        written = on_written or _ignore
        if self.batch_size is not None:
            return self._run_batches(db, written)
        if self.single:
            report = db.transact(self.records[0], operation_id=self.operation_id, if_basis_tx=self.if_basis_tx,
                                 **self.provenance)
            written(1)
            return report
        counts, last_tx = {"applied": 0, "noop": 0, "already_applied": 0}, None
        for where, record in self._located_records():
            try:
                report = db.transact(record, **self.provenance)
            except FgraphError as exc:
                raise stopped_at(exc, where, sum(counts.values())) from exc
            counts[report["status"]] += 1
            last_tx = report["tx"] if report["tx"] is not None else last_tx
            if on_report is not None:
                on_report(report)
            written(1)
        transactions = sum(counts.values())
        return {"applied": counts["applied"], "basis_tx": db.latest_tx(), "last_tx": last_tx,
                "noop": counts["noop"], "transactions": transactions}

    def iter_batches(self) -> Iterator[list]:
        items = self._numbered_records()
        while batch := list(itertools.islice(items, self.batch_size)):
            yield [record for _, record in batch]

    def batches(self) -> list[list]:
        return list(self.iter_batches())

    def _run_batches(self, db, written) -> dict:
        """Batches are read, checked and written one after another, as the published runtime does:
        a bad line (JSON, or an array that is not an operation) stops the run at its batch and the
        batches before it stay committed. An option that guards one batch only (``--operation-id``,
        ``--if-basis-tx``) is refused, with nothing written, as soon as a record after the first
        batch is seen — read before the first batch is written."""
        guarded = self.operation_id is not None or self.if_basis_tx is not None
        items = self._numbered_records()
        counts = {"already_applied": 0, "applied": 0, "noop": 0}
        last_tx, batch_count, item_count = None, 0, 0
        while batch := list(itertools.islice(items, self.batch_size)):
            if batch_count == 0 and guarded and next(items, None) is not None:
                option = "--operation-id" if self.operation_id is not None else "--if-basis-tx"
                raise ValueTypeError(f"{option} cannot span multiple batches",
                                     "use --operation-id-prefix for idempotent batch operation ids")
            _check_batch_items((record for _, record in batch), batch[0][0])
            operation_id = self.operation_id
            if self.operation_id_prefix is not None:
                operation_id = f"{self.operation_id_prefix}:{batch_count:08d}"
            try:
                report = db.transact([record for _, record in batch], operation_id=operation_id,
                                     if_basis_tx=self.if_basis_tx, **self.provenance)
            except FgraphError as exc:
                where = f"batch {batch_count + 1} (items {batch[0][0]}-{batch[-1][0]})"
                done = "no batch before it was" if batch_count == 0 else \
                    f"the {batch_count} batch{'es' if batch_count > 1 else ''} before it ({item_count} items) " \
                    f"stay{'' if batch_count > 1 else 's'}"
                raise rewrap(exc, before=f"{where}: ",
                             after=f" ({done} committed; it and what follows were not written)") from exc
            counts[report["status"]] += 1
            last_tx = report["tx"]
            written(len(batch))
            batch_count += 1
            item_count += len(batch)
        return {**counts, "basis_tx": db.latest_tx(), "batches": batch_count, "items": item_count, "tx": last_tx}


def _ignore(*_) -> None:
    pass


def stopped_at(error: FgraphError, where: str, committed: int) -> FgraphError:
    """A multi-record add stopped by ``error`` at ``where``, told how far it got (issue 49 item 3):
    the records before it stay committed, one transaction each (09 §4.1), nothing after it is written."""
    before = "no record before it was" if committed == 0 else \
        f"the {committed} record{'s' if committed > 1 else ''} before it stay{'' if committed > 1 else 's'}"
    return rewrap(error, before=f"{where}: ", after=f" ({before} committed; it and what follows were not written)",
                  hint=f"{error.hint}; then add the input again from {where} on" if error.hint
                  else f"fix it, then add the input again from {where} on")


def _check_batch_items(records: Iterable, first: int = 1) -> None:
    """A batch is one list of transaction items, so a record that is a JSON array must be an operation."""
    for number, record in enumerate(records, first):
        if isinstance(record, list) and not (record and isinstance(record[0], str)):
            shown = "[]" if not record else f"an array starting with {type(record[0]).__name__}"
            raise ValueTypeError(
                f"batch item {number} is {shown}, not a transaction item",
                'in batch mode each record is one map or one ["assert"|"retract"|"cas", ...] operation; '
                "give a list of maps as NDJSON, one map per line")


def _is_ndjson(source: DataSource) -> bool:
    """A first non-blank line that is a JSON value by itself, followed by another non-blank line,
    cannot be part of one document (a value may only be followed by whitespace): NDJSON, known
    without reading further. Anything else is read whole as one document (09 §4.1)."""
    lines = source.lines()
    first = next(lines, None)
    if first is None or next(lines, None) is None:
        return False
    try:
        loads(first[1])
    except FgraphError:
        return False
    return True


def _parsed_lines(source: DataSource) -> Iterator[tuple[int, object]]:
    """(line number, record) of each non-blank line; a line that is not JSON raises naming it."""
    for number, line in source.lines():
        try:
            yield number, loads(line)
        except FgraphError as exc:
            raise rewrap(exc, before=f"add input line {number}: ") from exc


def _check_lines(source: DataSource, on_line=None) -> int:
    """Parse every record once, keeping none (all are checked before any is written); their count.
    ``on_line()`` is called after each record (progress)."""
    count = 0
    for _ in _parsed_lines(source):
        count += 1
        if on_line is not None:
            on_line()
    return count


def prepare(data: "str | DataSource", *, operation_id=None, operation_id_prefix=None, batch_size=None,
            if_basis_tx=None, provenance: dict | None = None, on_line=None) -> AddJob:
    """Parse ``data`` and check the option combinations of 09 §4.1 that need no database.

    ``provenance`` (keys ``by``, ``source``, ``meta``) is given to every transaction the job makes;
    ``on_line()`` is called after each NDJSON record checked (progress)."""
    if operation_id_prefix is not None and batch_size is None:
        raise ValueTypeError("operation_id_prefix requires batch_size", "pass --batch-size N as well")
    if operation_id_prefix is not None and operation_id is not None:
        raise ValueTypeError("operation_id and operation_id_prefix are exclusive",
                             "use operation_id for one transaction or operation_id_prefix for batches")
    optional_int(batch_size, "batch_size {value!r} is out of range", "use {low}..{high}", low=1, high=MAX_BATCH_SIZE)
    if operation_id_prefix is not None and not isinstance(operation_id_prefix, str):
        raise ValueTypeError(f"operation_id_prefix {operation_id_prefix!r} is not a string", "use a short text key")
    options = {"operation_id": operation_id, "operation_id_prefix": operation_id_prefix, "batch_size": batch_size,
               "if_basis_tx": if_basis_tx}
    source = data if isinstance(data, DataSource) else DataSource("inline", data)
    if _is_ndjson(source):
        # NDJSON is checked whole before the first record is written (09 §4.1); in batch mode each
        # batch is checked as it is reached (AddJob._run_batches).
        records, single = None, False
        count = _check_lines(source, on_line) if batch_size is None else None
    else:
        records, single = parse_records(source.whole_text())
        count = len(records)
    if batch_size is None and not single:
        if operation_id is not None:
            raise ValueTypeError("--operation-id requires one JSON transaction, not NDJSON",
                                 "use --batch-size with --operation-id-prefix for idempotent NDJSON imports")
        if if_basis_tx is not None:
            raise ValueTypeError("--if-basis-tx cannot span several NDJSON transactions",
                                 "use --batch-size with --operation-id-prefix for idempotent NDJSON imports")
    return AddJob(records, single, source=source if records is None else None, count=count,
                  provenance=provenance, **options)


def add(db, text: "str | AddJob", *, operation_id=None, operation_id_prefix=None, batch_size=None,
        if_basis_tx=None):
    """Transact ``text`` (or a prepared ``AddJob``): a report, a list of reports, or a batch summary."""
    if isinstance(text, AddJob):
        if (operation_id, operation_id_prefix, batch_size, if_basis_tx) != (None, None, None, None):
            raise ValueTypeError("options are already part of the prepared job", "pass them to prepare()")
        return text.run(db)
    return prepare(text, operation_id=operation_id, operation_id_prefix=operation_id_prefix,
                   batch_size=batch_size, if_basis_tx=if_basis_tx).run(db)


@contextlib.contextmanager
def open_stream(src: str, stdin: IO):
    """A binary handle on SRC (a path, or ``-`` for stdin); unreadable, or not a regular file (a FIFO,
    a device, a directory: refused at once, issue 48 item 4) ⇒ FormatError."""
    if src == "-":
        yield getattr(stdin, "buffer", stdin)
        return
    handle = open_regular_input(src)
    with handle:
        yield handle


def verify_stream(src: str, stdin: IO) -> dict:
    """``fgraph verify``: check a snapshot or event stream file (or stdin) without a database."""
    from fgraph.streams.verify import verify
    with open_stream(src, stdin) as handle:
        return verify(handle)
