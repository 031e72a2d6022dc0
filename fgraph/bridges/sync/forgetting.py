"""Excisions through a message log (issue 33, decisions F1–F3 in docs/forgetting.md).

An event/1 stream cannot carry an excision: its excision event names only the events it redacted,
and the published runtime refuses it and every redacted stub. A log carries two more kinds of
record, on side subjects of the store that made them, outside its event order:

- the **excision record** (``excision/1``, ``Fgraph-Kind: excision``, id ``excision:<event>``):
  what was excised, which events were redacted, the order they had (``chain``) and which of them
  left a remainder (``partial``);
- a **remainder** (``Fgraph-Kind: remainder``, id derived from the redacted event): what is left
  of a redacted event, an ordinary event/1 line for a consumer that never had the event.

The publisher, meeting an excision event in its store, publishes the remainders and the record,
then deletes from the log the records that carried the erased content, then appends the excision
event itself (so a publisher killed anywhere redoes all of it). A consumer carries the record out
on its target (``Db.carry_out_excision``: once, under the origin's operation id), skips the stubs
it holds, takes the remainders of events it never had, and treats a predecessor the log no longer
holds as settled once the record that erased it is carried out.

Every side record is sealed by the publishing store's key like its events (``signing.py``); a
consumer verifies each before use (``trust.py``) and carries an excision out only on what that
store brought to the target (decision T3 in docs/forgetting.md).
"""

from __future__ import annotations

from fgraph.core.canonical import dumps, loads
from fgraph.core.errors import FgraphError, FormatError
from fgraph.ops.propagate import check_record, is_excision_line, remainder_event
from fgraph.bridges.sync.trust import Refused, verified_runs

MAX_WALK = 100_000      # redacted predecessors followed back from one record before giving up


def publish_redacted(source, log, line: str) -> None:
    """Before a redacted line of ``source`` is appended: publish its remainder (a stub) or, for an
    excision event, the remainders, the record, and delete the records of the erased events."""
    record = loads(line)
    event = record["event"]
    db, store = source.db, source.store

    def put(kind: str, key: str, line: str, msg_id: str) -> None:
        log.put(store, kind, key, line, msg_id, seal=source.signer.seal(source.scope, store, kind, msg_id, None, line))
    if "redacts" not in record:
        remainder = db.redacted_remainder(event)
        if remainder is not None:
            put("remainder", event, remainder, remainder_event(event))
        return
    excision = db.excision_record(event)
    remainders = 0
    for redacted in excision["redacts"]:
        remainder = db.redacted_remainder(redacted)
        if remainder is not None:
            put("remainder", redacted, remainder, remainder_event(redacted))
            remainders += 1
    put("excision", "", dumps(excision), "excision:" + event)
    deleted = log.erase(store, set(excision["redacts"]))
    done = {"event": event, "origin": excision["origin"], "target": excision["target"], "messages_deleted": deleted,
            "remainders_published": remainders, "broker": log.erase_report()}
    for earlier in source.excisions:   # published again after another run's stub (log._another_run): one entry
        if earlier["event"] == event:
            done["messages_deleted"] += earlier["messages_deleted"]
            done["remainders_published"] = max(remainders, earlier["remainders_published"])
            earlier.update(done)
            return
    source.excisions.append(done)


class ExcisionIndex:
    """The excision records of each store the consumer met, read from the log when a lookup misses;
    a record read back whose seal does not verify is left out (delivered, it is refused loudly)."""

    def __init__(self, log, trust):
        self.log, self.trust = log, trust
        self.by_event: dict = {}
        self.by_redacted: dict = {}
        self.loaded: set = set()

    def add(self, store: str, record: dict) -> None:
        self.by_event[(store, record["event"])] = record
        for uuid in record["redacts"]:
            self.by_redacted[(store, uuid)] = record

    def covering(self, store: str, event: str) -> dict | None:
        """The record that is ``event`` (an excision) or that redacted ``event``."""
        key = (store, event)
        found = self.by_event.get(key) or self.by_redacted.get(key)
        if found is None and store not in self.loaded:
            self.loaded.add(store)   # read once per batch at most; ``fresh`` lets the next batch read again
            for line in self.log.excision_records(store):
                record = parse(line)
                try:
                    self.trust.check(store, getattr(line, "seal", None), self.log.stream, "excision",
                                     "excision:" + record["event"], None, line, f"{self.log.name}, excision records")
                except Refused:
                    continue
                self.add(store, record)
            found = self.by_event.get(key) or self.by_redacted.get(key)
        return found

    def fresh(self) -> None:
        self.loaded.clear()


def apply_noting(db, trust, store: str, lines, skip=None) -> dict:
    """``db.apply_summary(lines, skip=skip)`` of one store's lines, then the note that ``store``
    brought every transaction it made (``trust.note_provenance``, decision T3). Where the apply
    began is read by the first ``skip`` call, which runs inside the apply's write transaction before
    its first record: nothing another writer commits can fall inside the range."""
    began: list = []

    def first(record) -> bool:
        if not began:
            began.append(db.latest_tx())
        return bool(skip is not None and skip(record))
    summary = db.apply_summary(lines, skip=first)
    if summary["applied"] and began:
        trust.note_provenance([(store, began[0] + 1, summary["basis_tx"])])
    return summary


def parse(line: str) -> dict:
    try:
        record = loads(line)
    except FgraphError:
        raise FormatError(f"an excision record in the log is not JSON: {line[:120]!r}",
                          "the log's excision records are written by `fgraph sync --to URL`") from None
    return check_record(record)


class Consumer:
    """Applies one fetched batch in order: ordinary events in as few transactions as the redacted
    lines and excisions between them allow; returns what to acknowledge and what to hand back."""

    def __init__(self, db, log, counts: dict, excisions: list, trust):
        self.db, self.log, self.counts, self.excisions, self.trust = db, log, counts, excisions, trust
        self.index = ExcisionIndex(log, trust)
        self.stand_ins = db.stand_ins()
        self.set_aside: list = []

    def process(self, records) -> tuple[list, list]:
        """What to acknowledge and what to hand back; records refused are in ``set_aside`` (with
        their error), neither applied nor acknowledged."""
        self.index.fresh()
        self.done, self.lines, later, held, self.known, self.set_aside = [], [], [], set(), set(), []
        proved = verified_runs(records, self.log.stream)      # one signature per run of a store's records
        for record in records:
            try:
                self.trust.check(record.store, record.seal, self.log.stream, record.kind, record.event, record.prev,
                                 record.line, record.where or self.log.name, verified=id(record) in proved)
                self.one(record, later, held)
            except Refused as refused:
                self.set_aside.append((record, refused))
        self.flush()
        return self.done, later

    def one(self, record, later: list, held: set) -> None:
        if record.kind == "remainder":        # read when needed, by its redacted event
            self.done.append(record)
            return
        if record.kind == "excision":
            self.flush()
            parsed = parse(record.line)
            self.index.add(record.store, parsed)
            self.carry_out(parsed, record.store, record.where)
            self.done.append(record)
            return
        if record.store in held:
            later.append(record)
            return
        steps = self.walk(record.store, record.prev)
        if steps is None or (is_excision_line(record.line) and not self.redacted(record, steps)):
            held.add(record.store)
            later.append(record)
            return
        if not is_excision_line(record.line):
            self.perform(record.store, steps, record.where)
            self.lines.append(record)
        self.known.add(record.event)

    def flush(self) -> None:
        """Apply the lines held so far: one transaction per run of one store's records (so that the
        provenance of each new transaction is known without reading anything back)."""
        start = 0
        while start < len(self.lines):
            store = self.lines[start].store
            end = start
            while end < len(self.lines) and self.lines[end].store == store:
                end += 1
            summary = apply_noting(self.db, self.trust, store, [r.line for r in self.lines[start:end]],
                                   self.stand_ins.covers)
            for key in ("already_applied", "applied", "events", "noop", "stood_in"):
                self.counts[key] += summary[key]
            self.counts["batches"] += 1
            self.done.extend(self.lines[start:end])
            start = end
        self.lines = []

    def walk(self, store: str, prev):
        """The steps that settle ``prev`` (oldest first), None while the log cannot say yet."""
        steps = []
        for _ in range(MAX_WALK):
            if prev is None or prev in self.known or self.db.holds_event(prev):
                return steps[::-1]
            record = self.index.covering(store, prev)
            if record is None:
                return None
            if record["event"] == prev:
                steps.append(("excise", record, prev))
                prev = record["prev"]
            else:
                steps.append(("remainder", record, prev))
                prev = record["chain"].get(prev)
        return None

    def perform(self, store: str, steps, where: str = "") -> None:
        if steps:
            self.flush()
        for kind, record, event in steps:
            if kind == "excise":
                self.carry_out(record, store, f"met before {where}")
            else:
                self.take_remainder(store, event)
            self.known.add(event)

    def redacted(self, record, steps) -> bool:
        """A stub or an excision event from the log; False when its excision record is not there yet."""
        self.flush()
        event = record.event
        if "redacts" in loads(record.line):
            found = self.index.covering(record.store, event)
            if found is None:
                return False
            self.perform(record.store, steps, record.where)
            self.carry_out(found, record.store, f"met at {record.where}")
        else:
            self.perform(record.store, steps, record.where)
            if self.db.holds_event(event):
                self.counts["redacted_held"] += 1
            else:
                self.take_remainder(record.store, event)
        self.done.append(record)
        return True

    def take_remainder(self, store: str, event: str) -> None:
        line = self.log.remainder(store, event)
        if line is None:
            self.counts["redacted_skipped"] += 1
            return
        msg_id = remainder_event(event)
        self.trust.check(store, getattr(line, "seal", None), self.log.stream, "remainder", msg_id, None, line,
                         f"{self.log.name}, the remainder of {event}")
        summary = apply_noting(self.db, self.trust, store, [line])
        self.counts["remainders"] += summary["applied"]
        self.counts["redacted_skipped"] += 1

    def carry_out(self, record: dict, store: str, where: str = "") -> None:
        where = f"the excision record of event {record['event']}, {where or self.log.name}"
        outcome = self.db.carry_out_excision(record, self.log.name, allow=self.trust.allow_erasure(store, where))
        if not any(seen["origin"] == outcome["origin"] for seen in self.excisions):
            self.excisions.append(outcome)
