"""``fgraph sync`` through a message log (issue 32 item 1, docs/replication.md "Through NATS JetStream").

The file-to-file sync of ``fgraph.bridges.sync.files`` keeps each source's position in a cursor file
beside the target. Through a log the positions live in the log itself:

- **publish** (stores → log): each source store appends its event/1 lines, in commit order, under
  its own key (``store_id``). Where a source stands is read back from the log (the last record
  under its key), never from a local file, so a publisher killed anywhere resumes after what the
  log holds; a re-sent event is a no-op because the record id is the event UUID.
- **consume** (log → target): one durable consumer per target (named from ``store_id`` of the
  target), records applied in bounded batches, each batch one target transaction, acknowledged
  only after that transaction commits. A record delivered twice is ``already_applied``.

Every record is sealed by its store's signing key (``signing.py``, decision T1 in docs/forgetting.md)
and the consumer acts on none that does not verify under the key its target pinned for that store or
its trust policy names (``trust.py``, T2); a record refused is set aside in the target's quarantine
(``quarantine.py``: acknowledged, retried at each later run), the other stores go on, and the run
ends with a typed error naming it. A message that is no fgraph record (another application's) is
quarantined too, and reported; a one-shot run returns once nothing applicable is left, naming what
waits for a predecessor the log does not hold (issue 48 item 3).

Every record also names the event that precedes it in its source (``prev``). The consumer applies
a record only when ``prev`` is already in the target (or earlier in the same batch), and hands the
others back to the log for later: a log that redelivers out of order (a consumer restarted while
older records await their ack timeout) can delay a source but never reorder it.

``Log`` is the interface an adapter implements; ``fgraph.bridges.sync.adapters`` is the registry of
adapters by URL scheme (one module each; ``adapters/memory.py`` is the reference), and its
``sync`` opens the log a URL names and calls ``publish`` or ``consume`` here. docs/replication.md
"Adding a log adapter" says what a new one must provide.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from fgraph.core.canonical import loads
from fgraph.core.checks import positive_number, strict_int
from fgraph.core.errors import Conflict, FgraphError, FormatError, NotFound, ValueTypeError, rewrap
from fgraph.core.limits import GENESIS_TX, SYNC_BATCH, SYNC_INTERVAL, SYNC_RETRY
from fgraph.ops.propagate import is_excision_line
from fgraph.bridges.sync import signing
from fgraph.bridges.sync.forgetting import Consumer, publish_redacted
from fgraph.bridges.sync.signing import Seal
from fgraph.bridges.sync.quarantine import Quarantine, judge, stalled, stuck
from fgraph.bridges.sync.trust import Trust


class LogUnavailable(NotFound):
    """The log cannot be reached now (server down, restarting, no leader); a retry may succeed."""


@dataclass
class Record:
    """One event as the log delivers it to a consumer."""

    line: str
    event: str
    store: str
    prev: str | None
    handle: Any = field(default=None, repr=False)   # the adapter's own message object
    kind: str = "event"                             # "excision" and "remainder" records carry forgetting
    seal: Seal | None = None                        # the publisher's key and signature, as the log carried them
    where: str = ""                                 # where the log keeps it (subject, sequence), for errors
    subject: str = ""                               # the log's subject and sequence of it (the quarantine's key)
    sequence: int = 0
    foreign: str = ""                               # why it is no fgraph record ("" when it is one; quarantine.py)
    size: int = 0                                   # its bytes, for a foreign one (``line`` then holds a preview)


class SealedLine(str):
    """A side record's line (``excision_records``, ``remainder``) with the seal it was published with."""

    seal: Seal | None = None

    @classmethod
    def of(cls, line: str, seal: Seal | None) -> SealedLine:
        sealed = cls(line)
        sealed.seal = seal
        return sealed


class Log(Protocol):
    """What ``publish`` and ``consume`` need from a log (one adapter per kind of log)."""

    name: str
    stream: str    # the log's own name, the same from every client: what a seal covers (never a server address)

    def last(self, store: str) -> str | None:
        """The event UUID of the last record under ``store``'s key, None when there is none; foreign
        messages after it are stepped over (the next append expects the key's real end)."""

    def append(self, store: str, source: str, line: str, event: str, prev: str | None, *,
               seal: Seal | None = None) -> bool:
        """Append one event durably, in order after ``prev``, with its ``seal`` (delivered with it);
        returns False when the log already had it. ``Conflict`` when another record of ``store``
        came after the last one this handle knows; foreign messages that came are stepped over."""

    def fetch(self, consumer: str, limit: int, wait: float) -> list[Record]:
        """At most ``limit`` records for the durable ``consumer`` (empty after ``wait`` seconds idle),
        each with its ``where``, ``subject`` and ``sequence``; a message that is no fgraph record comes
        too, with ``foreign`` saying why (``quarantine.not_a_record``), ``line`` a preview, ``size``."""

    def ack(self, records: list[Record]) -> None:
        """The records are committed in the target: never deliver them again."""

    def defer(self, records: list[Record]) -> None:
        """Deliver these records again later (their predecessor is not in the target yet)."""

    def pending(self, consumer: str) -> int:
        """Records not yet acknowledged by ``consumer`` (delivered or not)."""

    def close(self) -> None:
        """Release the connection; the log keeps its records (a handle is also a context manager)."""

    # forgetting (fgraph.bridges.sync.forgetting, docs/forgetting.md F2)
    def put(self, store: str, kind: str, key: str, line: str, msg_id: str, *, seal: Seal | None = None) -> bool:
        """Publish an excision record or a remainder beside ``store``'s events (delivered to consumers
        too), with its ``seal``."""

    def excision_records(self, store: str) -> list[str]:
        """Every excision record published for ``store``, oldest first (``SealedLine``s: with their seals)."""

    def remainder(self, store: str, event: str) -> str | None:
        """The remainder published for ``store``'s redacted event ``event`` (a ``SealedLine``)."""

    def erase(self, store: str, events: set) -> int:
        """Delete the records of ``store`` that carry ``events``; returns how many were deleted."""

    def erase_report(self) -> dict:
        """What the last ``erase`` did about the other copies the log keeps (a broker's replication
        logs): ``status`` "erased" or "remains", and what, until when and how to remove it."""


def store_id(db) -> str:
    """A stable identity of a store: from the hash of its genesis event, which holds its creation
    time, so a new store at the same path is another store and a copy (backup, restore) the same."""
    digest = db.receipt(GENESIS_TX)["event_hash"].split(":", 1)[-1]
    return digest[:32]


def event_of(line: str) -> str:
    try:
        record = loads(line)
    except FgraphError:
        record = None
    event = record.get("event") if isinstance(record, dict) else None
    if not isinstance(event, str):
        raise FormatError(f"a log record is not an event/1 line: {line[:120]!r}", "publish with `fgraph sync --to URL`")
    return event


RETRY_PAUSE = 0.2   # seconds between two attempts of a call the log could not answer
OVERTAKEN = 16      # resumptions in a row after another run of the same store's publisher appended first


def _retrying(call, retry: float, stop):
    """``call()``, again while the log is unavailable (a server restarting, a cluster electing a
    leader, a node lost), for at most ``retry`` seconds; on a terminal a line on stderr says what is
    waited for. At the bound, a ``LogUnavailable`` names what was waited for and what to do."""
    started = None
    try:
        while True:
            try:
                return call()
            except LogUnavailable as exc:
                now = time.monotonic()
                started = now if started is None else started
                if stop():
                    raise
                if now - started >= retry:
                    raise LogUnavailable(f"gave up after waiting {now - started:.0f} s (the retry bound, "
                                         f"{retry:g} s) for the log: {exc.message}",
                                         "run the same sync again once the servers answer: it resumes where the "
                                         "log stands, nothing is lost or doubled; " + (exc.hint or "")) from None
                _waiting_line(f"fgraph sync: waiting for the log ({now - started:.0f} s of {retry:g} s): "
                              f"{exc.message}")
                _wait(RETRY_PAUSE, stop)
    finally:
        if started is not None:
            _waiting_line(None)


def _waiting_line(text: str | None) -> None:
    """One progress line on stderr, only when it is a terminal (``None`` erases it)."""
    import sys
    stream = sys.stderr
    try:
        if not stream.isatty():
            return
        stream.write("\r\x1b[K" + (text[:200] if text else ""))
        stream.flush()
    except (OSError, ValueError, AttributeError):   # a closed or odd stderr: the line is only a courtesy
        pass


def _wait(seconds: float, stop) -> None:
    end = time.monotonic() + seconds
    while not stop() and time.monotonic() < end:
        time.sleep(min(0.05, max(0.0, end - time.monotonic())))


def _check(batch_size, interval) -> None:
    strict_int(batch_size, "batch_size={value!r} is invalid", "pass a positive number of events", low=1)
    positive_number(interval, "interval={value!r} is invalid", "pass a positive, finite number of seconds")


class _Published:
    """One source store being published: its handle, identity, position and counts."""

    def __init__(self, path: str, db, log: Log, signer: signing.Signer):
        self.path, self.db, self.store = path, db, store_id(db)
        self.signer, self.scope = signer, log.stream
        self.position, self.prev, self.since, self.stale = GENESIS_TX, None, GENESIS_TX, False
        self.counts = {"events": 0, "published": 0, "duplicates": 0}
        self.overtaken = 0     # resumptions since this source's last append (``_another_run``)
        self.excisions: list = []
        self.resume(log)
        self.since = self.position

    def resume(self, log: Log) -> None:
        """Where this source stands, read back from the log."""
        event = log.last(self.store)
        if event is None:
            self.position, self.prev = GENESIS_TX, None
            return
        try:
            self.position = self.db.resolve({"eid": event})
        except NotFound:
            raise Conflict(f"the log {log.name!r} holds event {event} under store {self.store} ({self.path!r}), "
                           "which that store does not have",
                           "the store was replaced by an older copy of itself; publish a copy with its whole "
                           "history, or use a new stream") from None
        self.prev = event

    def report(self) -> dict:
        return {"source": self.path, "store": self.store, "key": self.signer.key_id, "since": self.since,
                "position": self.position,
                "latest": self.db.latest_tx(), **self.counts, "excisions": self.excisions}


def publish(sources, log: Log, *, batch_size: int = SYNC_BATCH, follow: bool = False,
            interval: float = SYNC_INTERVAL, retry: float = SYNC_RETRY, stop=None,
            signing_key: str | None = None) -> dict:
    """Append every event of each store in ``sources`` that ``log`` does not hold yet, in each
    store's commit order, the stores taking turns batch by batch; with ``follow``, keep going
    until ``stop()``. An unavailable log is retried for ``retry`` seconds, resuming from what
    the log holds. Each record is sealed with its store's key (``signing_key``, or
    ``<source>.signing-key``, created on first use)."""
    _check(batch_size, interval)
    stop = stop or (lambda: False)
    paths = [str(s) for s in sources]
    if not paths:
        raise ValueTypeError("sync needs at least one source", "pass --from PATH once per source store")
    if signing_key is not None and len(paths) > 1:
        raise ValueTypeError("--signing-key names the key of one store, and several are published",
                             "publish each store on its own, or let each use its own <db>.signing-key")
    from fgraph.db import connect
    with contextlib.ExitStack() as stack:
        opened = []
        for path in paths:
            if not os.path.exists(path):
                raise NotFound(f"source {path!r} does not exist", "check the path of --from")
            db = stack.enter_context(connect(path, read_only=True))
            signer = signing.for_store(path, signing_key)   # before anything is published: a bad key stops here
            opened.append(_retrying(lambda: _Published(path, db, log, signer), retry, stop))
        ids = [s.store for s in opened]
        if len(set(ids)) != len(ids):
            raise ValueTypeError("two sources are the same store (copies of one file)", "name each store once")
        while True:
            read = 0
            for source in opened:
                if stop():
                    break
                read += _retrying(lambda: _publish_batch(source, log, batch_size), retry, stop)
            if not read and (not follow or stop()):
                break
            if not read:
                _wait(interval, stop)
        totals = {key: sum(s.counts[key] for s in opened) for key in ("events", "published", "duplicates")}
        return {**totals, "excisions": [e for s in opened for e in s.excisions], "log": log.name,
                "sources": [s.report() for s in opened]}


def _publish_batch(source: _Published, log: Log, batch_size: int) -> int:
    """Append the next at most ``batch_size`` events of ``source``; after a failure the source
    resumes from what the log holds (an event the log got twice is a no-op there)."""
    if source.stale:       # an append failed: what reached the log is unknown until asked
        source.resume(log)
        source.stale = False
    lines = source.db.iter_tx_events(source.position, source.db.latest_tx())
    count = 0
    try:
        for tx, line in lines:
            event = event_of(line)
            try:
                if is_excision_line(line):
                    publish_redacted(source, log, line)
                # chained to the event this signer sealed before: a consumer verifies one seal per run
                seal = source.signer.seal_next(source.scope, source.store, "event", event, source.prev, line)
                fresh = log.append(source.store, source.path, line, event, source.prev, seal=seal)
            except LogUnavailable:
                source.stale = True
                raise
            except Conflict:
                if not _another_run(source, log):
                    raise
                return count + 1    # not idle: the next batch goes on from where the log now stands
            source.overtaken = 0
            source.position, source.prev = tx, event
            source.counts["events"] += 1
            source.counts["published" if fresh else "duplicates"] += 1
            count += 1
            if count >= batch_size:
                break
    finally:
        lines.close()
    return count


def _another_run(source: _Published, log: Log) -> bool:
    """After "moved under this publisher": whether another run of this store's own publisher appended
    first (``excise --reach`` beside a ``sync --follow``, one resuming between the other's erase and its
    excision event). This one resumes from what the log holds, ahead or behind, at most ``OVERTAKEN``
    times in a row; a record this store does not hold (a diverged copy) is the ``Conflict`` of ``resume``."""
    source.overtaken += 1
    if source.overtaken > OVERTAKEN:
        return False
    source.resume(log)
    return True


def consume(log: Log, target: str, *, batch_size: int = SYNC_BATCH, follow: bool = False,
            interval: float = SYNC_INTERVAL, retry: float = SYNC_RETRY, stop=None,
            trust: str | None = None, accept_keys=()) -> dict:
    """Apply the log's events to ``target`` (created if missing) through the target's durable
    consumer, batch by batch, acknowledging each batch after its transaction commits. Without
    ``follow`` it returns once it has applied what is applicable: nothing is pending but what waits
    for a predecessor the log does not hold (a ``Waiting`` error names it) or what was refused.

    A record is acted on only when its seal verifies under its store's key (pinned on first use
    beside the target, accepted with ``accept_keys`` ``STORE:KEY``, or named by the ``trust`` policy
    file); one that does not is set aside in the target's quarantine (``quarantine.py``) — never
    applied, acknowledged in the log, retried at the start of each later run — and the run ends
    with a ``Conflict`` naming it (decision T2 in docs/forgetting.md). A message that is no fgraph
    record is quarantined too, reported in ``quarantined``, and the run goes on."""
    _check(batch_size, interval)
    stop = stop or (lambda: False)
    from fgraph.db import connect
    counts = {"already_applied": 0, "applied": 0, "batches": 0, "deferred": 0, "events": 0, "noop": 0,
              "redacted_held": 0, "redacted_skipped": 0, "remainders": 0, "stood_in": 0}
    excisions: list = []
    trusted = Trust(str(target), policy=trust, accept=accept_keys)
    held = Quarantine(str(target))
    refused: dict = {}        # where → the Refused error of a record set aside in this run
    kept_back: set = set()    # where of the records the quarantine had no room for: handed back to the log
    waiting: dict = {}        # where → (record, judged) deferred since the last batch that moved anything
    quarantined: list = []    # where of what this run put in the quarantine
    with connect(str(target)) as db:
        consumer = "fgraph-" + store_id(db)
        applying = Consumer(db, log, counts, excisions, trusted)

        def settle(records: list) -> list:
            """Apply ``records``; set aside what is refused or foreign; what waits goes back."""
            foreign = [r for r in records if r.foreign]
            records = [r for r in records if not r.foreign]
            try:
                done, later = _retrying(lambda: applying.process(records), retry, stop) if records else ([], [])
            except FgraphError as exc:
                if isinstance(exc, LogUnavailable):
                    raise
                _retrying(lambda: log.defer([r for r in records if r.handle is not None]), retry, stop)
                raise rewrap(exc, before=f"sync from {log.name!r} into {str(target)!r} stopped; nothing of this "
                             "batch after the last commit was acknowledged: ") from exc
            for record, error in applying.set_aside:
                refused.setdefault(record.where, error)
            aside = [(r, "foreign", None) for r in foreign] + [(r, "refused", e) for r, e in applying.set_aside]
            fresh = [r.where for r, _, _ in aside if r.where not in held.entries]
            into = held.hold(aside)
            quarantined.extend(w for w in fresh if w in held.entries)
            kept = {id(r) for r in into}
            back = [r for r, _, _ in aside if id(r) not in kept and r.handle is not None]
            kept_back.update(r.where for r in back)
            if done or into:
                _retrying(lambda: log.ack([r for r in done + into if r.handle is not None]), retry, stop)
            if back:
                _retrying(lambda: log.defer(back), retry, stop)
            if later:
                counts["deferred"] += len(later)
                _retrying(lambda: log.defer([r for r in later if r.handle is not None]), retry, stop)
            return done, later

        retried = held.retries(Record)
        for start in range(0, len(retried), batch_size):     # what was refused before: a key accepted since applies it
            held.release(settle(retried[start:start + batch_size])[0])
        while not stop():
            records = _retrying(lambda: log.fetch(consumer, batch_size, min(interval, 1.0)), retry, stop)
            if not records:
                if not follow and _retrying(lambda: log.pending(consumer), retry, stop) <= len(kept_back | waiting.keys()):
                    break
                continue
            done, later = settle(records)
            if done:
                waiting.clear()
            else:
                judge(waiting, later)
                if not follow and _retrying(lambda: log.pending(consumer), retry, stop) \
                        <= len(kept_back | stuck(waiting).keys()):
                    break    # nothing moves but what was refused and what waits behind a missing predecessor
        waits = [r for where, r in stuck(waiting).items() if where not in kept_back] if not follow else []
        if refused or waits:
            raise stalled(list(refused.values()), waits, str(target))
        return {**counts, "basis_tx": db.latest_tx(), "consumer": consumer, "excisions": excisions, "log": log.name,
                "quarantined": {"count": len(quarantined), "new": quarantined[:20], "held": len(held.entries)},
                "target": str(target)}
