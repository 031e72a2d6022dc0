"""Apply: merge an ``event/1`` stream into this store, all or nothing (spec 04 §5).

The stream is read line by line (LF only) in one write transaction, so memory is
bounded by the largest event and any bad line anywhere rolls back every line.
Each record replays as one local transaction that keeps the source's event UUID,
bytes and eids; names unify with the receiver's (spec README decision 3).
"""

from __future__ import annotations

import hashlib
from typing import Callable

from fgraph.core import values
from fgraph.core.canonical import dumps, loads
from fgraph.core.catalog import Catalog
from fgraph.core.checks import strict_int
from fgraph.core.errors import Conflict, FgraphError, SchemaError, TooLarge, ValueTypeError
from fgraph.core.identity import INSTANT_MAX, INSTANT_MIN, check_event_uuid, uuid_to_gid
from fgraph.core.names import check_attribute_name, check_name
from fgraph.core.transact import UNSET, Request, WriterHead, already_applied_report, run_in_transaction
from fgraph.core.txn import step, write_transaction
from fgraph.core.values import RefWire
from fgraph.core.limits import APPLY_BATCH_ROWS, BATCH_BYTES, EVENT_KEYS, MAX_EVENT_BYTES
from fgraph.core.replay import Replay
from fgraph.core.session import WriteSession
from fgraph.streams import ahead as lines_ahead
from fgraph.streams.lines import iter_lines, not_utf8

REQUIRED_KEYS = ("asserted", "at", "created", "event", "fgraph", "retracted")
FORBIDDEN_TX_FACTS = frozenset({"fgraph/at", "fgraph/by", "fgraph/source", "fgraph/meta"})


def parse_line(number: int, line, source=None) -> dict:
    raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    body = raw.rstrip(b"\r")
    if len(body) > MAX_EVENT_BYTES:
        raise TooLarge(f"the event is over {MAX_EVENT_BYTES} bytes",
                       "events larger than the cap cannot be applied").at_line(number)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise not_utf8(number, source, "event stream") from None
    record = loads(text)
    validate_record(record)
    return record


# -- validation ---------------------------------------------------------------------
def _fail(what: str) -> ValueTypeError:
    return ValueTypeError(what, "apply only accepts event/1 records as written by `fgraph tail`")


def check_selector(sel, what: str):
    if isinstance(sel, str):
        check_name(sel, what)
        return sel
    if isinstance(sel, dict) and set(sel) == {"eid"}:
        check_event_uuid(sel["eid"], "eid")
        return sel
    raise _fail(f"{what} {sel!r} must be a name or {{\"eid\": uuid}}")


def check_attribute(name) -> str:
    """A string must be a valid attribute name (SchemaError, as in a transaction); anything else is TypeError."""
    if not isinstance(name, str):
        raise _fail(f"attribute {name!r} must be an attribute name")
    return check_attribute_name(name)


def check_tagged(value, tag):
    if not isinstance(tag, str) or tag not in values.LOGICAL_TYPES:
        raise _fail(f"unknown tag {tag!r}")
    decoded = values.from_tagged(value, tag)
    if isinstance(decoded, RefWire):
        check_selector(decoded.selector, "ref")
    return decoded


def validate_record(record) -> None:
    if not isinstance(record, dict) or record.get("fgraph") != "event/1":
        raise _fail("the record is not an event/1 object")
    unknown = set(record) - EVENT_KEYS
    if unknown:
        raise _fail(f"unknown fields {sorted(unknown)} (redacted stubs and excision events cannot be applied)")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise _fail(f"missing fields {missing}")
    check_event_uuid(record["event"])
    strict_int(record["at"], "at {value!r} is not an instant in microseconds", low=INSTANT_MIN, high=INSTANT_MAX,
               error=_fail)
    for key in ("created", "asserted", "retracted", "tx_facts"):
        if key in record and not isinstance(record[key], list):
            raise _fail(f"{key} must be an array")
    for key in ("by", "source"):
        if key in record and not isinstance(record[key], str):
            raise _fail(f"{key} must be text")
    if "meta" in record:
        values.from_wire({"json": record["meta"]})
    for sel in record["created"]:
        check_selector(sel, "created identity")
    for key in ("asserted", "retracted"):
        for item in record[key]:
            if not isinstance(item, list) or len(item) != 4:
                raise _fail(f"{key} items must be [entity, attribute, value, tag]")
            check_selector(item[0], "entity")
            check_attribute(item[1])
            check_tagged(item[2], item[3])
    for item in record.get("tx_facts", ()):
        if not isinstance(item, list) or len(item) != 3:
            raise _fail("tx_facts items must be [attribute, value, tag]")
        check_attribute(item[0])
        if item[0] in FORBIDDEN_TX_FACTS:
            raise SchemaError(f"tx_facts cannot set {item[0]!r}", "by, source and meta are top-level event keys")
        check_tagged(item[1], item[2])


def apply_record(session: WriteSession, record: dict, *, details: bool = True,
                 canonical: str | None = None, digest: bytes | None = None) -> dict:
    """Apply one validated record inside the caller's write transaction (``details``: the report
    lists the facts it asserted and retracted, as ``Db.apply`` returns them). ``canonical`` and
    ``digest``: the record's canonical text and its SHA-256, when the caller has them already."""
    conn = session.conn
    if canonical is None or digest is None:
        canonical = dumps(record)
        digest = hashlib.sha256(canonical.encode("utf-8")).digest()
    cat = session.catalog()
    existing = cat.id_by_gid(uuid_to_gid(record["event"]))
    if existing is not None:
        row = cat.event_row(existing) if cat.is_transaction(existing) else None
        if row is not None and row[0] == digest:
            return already_applied_report(cat, existing)
        raise Conflict(f"event {record['event']} collides with a different local event or identity",
                       "the stream reuses a UUID with another payload; do not apply altered streams")
    request = Request([], by=record.get("by"), source=record.get("source"), meta=record.get("meta", UNSET))
    report = run_in_transaction(session, request, None, replay=Replay(record, canonical), details=details)
    if report["status"] == "applied":
        # The next record of this transaction starts from here: no max(tx), next_id or time
        # read-back (valid while no other row changes; a rollback clears the cache).
        session.schema_cache.head = WriterHead(report["tx"], report["at"], report["tx"] + 1, conn.total_changes())
    return report


DRY_RUN_LIST_CAP = 100


def _flush(writer: WriteSession) -> None:
    """Write the batch; the writer head stays valid, since the flush wrote only what it describes."""
    head, conn = writer.schema_cache.head, writer.conn
    current = head is not None and head.current(conn)
    writer.overlay.flush()
    if current:
        writer.schema_cache.head = head._replace(changes=conn.total_changes())


class ConflictAhead(Exception):
    """An optimistic dry run met a record apply would refuse with ``Conflict``: run it again with a
    savepoint per record (the caller still holds the stream's beginning). Not an ``FgraphError``:
    it never reaches a user."""


def apply_stream(session: WriteSession, source, *, on_report: Callable[[dict], None] | None = None,
                 dry_run: bool = False, bulk: bool = True, optimistic: bool = False, skip=None) -> dict:
    """Apply every record of ``source`` in one write transaction; returns the summary counts.

    Records are planned one by one, each as its own local transaction, and (``bulk``, the
    default) their rows are written in batches (``APPLY_BATCH_ROWS`` rows or ``BATCH_BYTES`` of
    values, whichever comes first) through an overlay (``fgraph.core.overlay``); ``bulk=False`` writes each record's rows as it goes.
    Both give the same rows, byte for byte (tests/core/test_overlay.py).

    With ``dry_run`` every record is applied inside its own savepoint and the whole
    transaction is rolled back at the end: conflicting events are counted and listed
    instead of aborting, and receiver values the stream would supersede are listed.
    ``optimistic`` (with ``dry_run``) writes as a real apply does, in batches and without a
    savepoint per record, and raises ``ConflictAhead`` at the first conflicting record; the same
    reports and summary otherwise (``fgraph review`` of a file tries this first).
    ``skip(record)`` true: the record is passed over and counted as ``stood_in`` (sync: the target
    holds what stands for it, ``fgraph.ops.propagate.StandIns``).
    Past its first lines, a long stream's lines are checked by a child process while this one
    writes (``fgraph.streams.ahead``); the same result either way.
    """
    summary = {"already_applied": 0, "applied": 0, "events": 0, "noop": 0}
    if skip is not None:
        summary["stood_in"] = 0
    dry = DryRun(0) if dry_run else None
    conn, schema_cache = session.conn, session.schema_cache
    with write_transaction(conn, schema_cache, session.identity_cache) as txn:
        schema_cache.validate(conn)
        if dry is not None:
            dry.basis = Catalog(conn).latest_tx()
        careful = dry is not None and not optimistic
        writer = session.buffered() if bulk and not careful else session
        with lines_ahead.ahead_lines(iter_lines(source), "apply") as lines:   # checked by a child
            for number, line, checked in lines:
                try:
                    if checked:    # a valid record whose canonical text is the line (streams.ahead)
                        record, canonical, digest = lines_ahead.applied_line(line)
                    else:
                        record, canonical, digest = parse_line(number, line, source), None, None
                    if skip is not None and skip(record):
                        summary["events"] += 1
                        summary["stood_in"] += 1
                        continue
                    if careful:
                        report = dry.apply(session, number, record, canonical, digest)
                    else:
                        report = apply_record(writer, record, details=on_report is not None or dry is not None,
                                              canonical=canonical, digest=digest)
                        if dry is not None:
                            dry.note_disagreements(number, record, report)
                        if writer.overlay is not None and writer.overlay.full(APPLY_BATCH_ROWS, BATCH_BYTES):
                            _flush(writer)
                except FgraphError as exc:
                    if dry is not None and not careful and isinstance(exc, Conflict):
                        raise ConflictAhead() from None
                    # a dry run past a conflict keeps it as the cause: apply would have stopped there (refusal())
                    raise exc.at_line(number) from (dry.refusal if dry is not None else None)
                summary["events"] += 1
                if report is None:
                    continue
                summary[report["status"]] += 1
                if on_report is not None:
                    on_report(report)
        if writer.overlay is not None and dry is None:
            _flush(writer)
        summary["basis_tx"] = Catalog(conn).latest_tx()
        if dry is not None:
            txn.discard()
    if dry is not None:
        session.forget_cached_state()
        return dry.summary(summary)
    return summary


class DryRun:
    """Bookkeeping for ``apply --dry-run``: conflicts and superseded receiver values."""

    def __init__(self, basis: int):
        self.basis = basis
        self.conflicts: list = []
        self.disagreements: list = []
        self.conflicting = 0
        self.refusal: Conflict | None = None   # the first conflict: what apply would raise

    def apply(self, session: WriteSession, number: int, record: dict, canonical: str | None = None,
              digest: bytes | None = None) -> dict | None:
        try:
            with step(session.conn, session.schema_cache, session.identity_cache):
                report = apply_record(session, record, canonical=canonical, digest=digest)
        except Conflict as exc:
            self.conflicting += 1
            if self.refusal is None:
                self.refusal = exc.at_line(number)  # type: ignore[assignment]  # at_line keeps the class
            if len(self.conflicts) < DRY_RUN_LIST_CAP:
                self.conflicts.append({"event": record["event"], "line": number, "message": str(exc)})
            return None
        self.note_disagreements(number, record, report)
        return report

    def note_disagreements(self, number: int, record: dict, report: dict) -> None:
        """Receiver facts (older than this apply) superseded without the stream retracting them."""
        explicit = {(str(e), a) for e, a, _, _ in record["retracted"]}
        for fact in report["retracted"]:
            if fact["tx"] > self.basis or (str(fact["e"]), fact["a"]) in explicit:
                continue
            new = [f["v"] for f in report["asserted"] if f["e"] == fact["e"] and f["a"] == fact["a"]]
            if len(self.disagreements) < DRY_RUN_LIST_CAP:
                self.disagreements.append({"attribute": fact["a"], "entity": fact["e"], "event": record["event"],
                                           "line": number, "receiver": fact["v"],
                                           "stream": new[0] if new else None})

    def summary(self, counts: dict) -> dict:
        return {"already_applied": counts["already_applied"], "basis_tx": self.basis,
                "conflicting": self.conflicting, "conflicts": self.conflicts,
                "disagreements": self.disagreements, "dry_run": True, "events": counts["events"],
                "new": counts["applied"], "noop": counts["noop"],
                "truncated": self.conflicting > len(self.conflicts) or len(self.disagreements) >= DRY_RUN_LIST_CAP}



def refusal(summary: dict | None = None, error: FgraphError | None = None) -> FgraphError | None:
    """What a real apply of the stream would raise, from a dry run's ``summary`` or the ``error`` it
    stopped on (issue 49 item 3: ``apply --dry-run`` exits as ``apply`` would): the first refused
    line's error, with apply's name and message; None when apply would commit."""
    if error is not None:
        cause = error.__cause__
        return cause if isinstance(cause, Conflict) else error
    if summary and summary.get("conflicting"):
        first = summary["conflicts"][0]   # listed in line order; the first is where apply stops
        return Conflict(f"line {first['line']}: {first['message']}")
    return None
