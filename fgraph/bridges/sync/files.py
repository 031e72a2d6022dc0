"""``fgraph sync``: fan the event/1 streams of several stores into one target (issue 16, docs/replication.md).

Built on the public ``Db`` only. Each source is opened read-only and read with ``iter_tx_events``,
pinned to its latest transaction at the start of each round; the target is written with
``apply_summary`` in batches of at most ``batch_size`` events, each batch one all-or-nothing
transaction, the sources taking turns batch by batch. After each committed batch the source's
position (its local tx and the event UUID there) is saved in a cursor file beside the target
(``<target>.sync.json``: temp file, fsync, rename, fsync of the directory).

The cursor is a verified hint, never the guarantee. Before it is used, the event it names must
still be the source's transaction at that position (a replaced source file fails this, and so
does a different genesis time) and must be present in the target (a target restored from an
older backup fails this); otherwise the source is read again from genesis. Reading again costs
time, not correctness: ``apply`` skips every event already present by UUID. A kill between a
batch's commit and its cursor write is the same case in small: the next run re-sends that batch
and every event of it is reported ``already_applied``.

One syncer writes into a target at a time: it holds an advisory lock on ``<target>.sync.lock``
(released by the kernel however the process ends); a second one fails with ``Conflict``.

The operator chose each source file, so its events need no seal. Its excisions are sealed by the
source's key (``<source>.signing-key``, created on the first one) and checked like a log's: the key
must be the one the target pinned for that store (or its ``--trust`` policy names), and the target
is erased only when that store introduced it here (decisions T1–T3 in docs/forgetting.md). A source
refused is set aside for the run, the others go on, and the run ends with a typed error.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time

from fgraph.core.files import open_sidecar, read_sidecar, same_file, write_atomically
from fgraph.core.sidecars import SYNC_CURSOR, SYNC_LOCK, refuse_sidecar_name
from fgraph.core.canonical import dumps, loads
from fgraph.core.checks import is_strict_int, positive_number, strict_int
from fgraph.core.errors import Conflict, FgraphError, FormatError, NotFound, ValueTypeError, rewrap
from fgraph.core.limits import GENESIS_TX, SYNC_BATCH, SYNC_INTERVAL
from fgraph.ops.propagate import is_excision_line
from fgraph.bridges.sync import signing
from fgraph.bridges.sync.forgetting import apply_noting
from fgraph.bridges.sync.log import store_id
from fgraph.bridges.sync.trust import FILE_SCOPE, Refused, Trust, refused_summary

CURSOR_SUFFIX = SYNC_CURSOR   # the names: fgraph.core.sidecars
LOCK_SUFFIX = SYNC_LOCK
CURSOR_FORMAT = "fgraph-sync-cursor/1"
STOP_CHECK = 0.05          # longest sleep between two looks at ``stop`` while idle

NEW, RESUMED, RESCAN = "new", "resumed", "rescan"


def cursor_path(target: str) -> str:
    """Where the positions of the sources synced into ``target`` are kept."""
    return str(target) + CURSOR_SUFFIX


def check_paths(sources, target: str) -> None:
    """A source that is the target, or a source named twice, is a usage mistake (``TypeError`` here;
    the CLI reports it as a usage error before calling)."""
    if not sources:
        raise ValueTypeError("sync needs at least one source", "pass --from PATH once per source store")
    for i, source in enumerate(sources):
        if same_file(source, target):
            raise ValueTypeError(f"source {source!r} is the target {target!r}",
                                 "a store cannot be synced into itself; pick another --to")
        for other in sources[:i]:
            if same_file(source, other):
                raise ValueTypeError(f"source {source!r} is given twice", "name each source store once")


class Source:
    """One source store: its read-only handle, identity, position and what this run did with it."""

    def __init__(self, path: str, db):
        self.path = str(path)
        self.key = os.path.realpath(self.path)
        self.db = db
        self.genesis_at = db.receipt(GENESIS_TX)["at"]   # the store's creation time: part of its identity
        self.position = GENESIS_TX                      # the last source tx read into the target
        self.anchor = (GENESIS_TX, None)                # the last source tx (and event) the target holds
        self.excisions: list = []                       # what each excision met on the way did here
        self.cursor = NEW
        self.since = GENESIS_TX
        self.latest = GENESIS_TX
        self.counts = {"already_applied": 0, "applied": 0, "batches": 0, "events": 0, "noop": 0,
                       "redacted_held": 0, "redacted_skipped": 0, "remainders": 0, "stood_in": 0}
        self.stand_ins = None                           # the target's, set when the target is open
        self.trust: Trust | None = None                 # the target's, set when the target is open
        self.store = store_id(db)
        self.signing_key: str | None = None             # --signing-key, else <source>.signing-key
        self.refused: Refused | None = None             # why this source was set aside in this run

    def seal_excision(self, record: dict) -> tuple:
        """The excision record's line and its seal by this store's key (created on first use)."""
        line = dumps(record)
        signer = signing.for_store(self.path, self.signing_key)
        return line, signer.seal(FILE_SCOPE, self.store, "excision", "excision:" + record["event"], None, line)

    def resume(self, entry, target) -> None:
        """Take the position from a cursor entry when it still holds for this source and the target."""
        if entry is None:
            return
        tx, event = entry.get("tx"), entry.get("event")
        if not is_strict_int(tx) or tx < GENESIS_TX \
                or not (event is None or isinstance(event, str)) or (event is None) != (tx == GENESIS_TX):
            raise FormatError(f"the sync cursor of {self.path!r} is damaged: {dumps(entry)[:200]}",
                              "delete the cursor file; sync then reads every source again, "
                              "skipping what the target already has")
        if entry.get("genesis_at") == self.genesis_at and (event is None or self._holds(tx, event, target)):
            self.position, self.anchor, self.cursor = tx, (tx, event), RESUMED
        else:
            self.cursor = RESCAN
        self.since = self.position

    def _holds(self, tx: int, event: str, target) -> bool:
        try:
            target.resolve({"eid": event})
            return self.db.resolve({"eid": event}) == tx
        except NotFound:
            return False

    def entry(self) -> dict:
        """The saved position is the last event the target holds: redacted lines read after it (an
        excision, stubs skipped) are read again by the next run, which finds them done or redoes them."""
        tx, event = self.anchor
        return {"event": event, "genesis_at": self.genesis_at, "path": self.path, "tx": tx}

    def report(self) -> dict:
        return {"source": self.path, "cursor": self.cursor, "since": self.since, "position": self.position,
                "latest": self.latest, **self.counts, "excisions": self.excisions}


class Cursors:
    """The cursor file: every source's position, rewritten atomically after each committed batch."""

    def __init__(self, path: str):
        self.path = path
        self.sources: dict = {}
        raw = read_sidecar(path, "sync cursor")
        if raw is None:
            return
        try:
            document = loads(raw)
        except FgraphError:
            document = None
        if not isinstance(document, dict) or document.get("fgraph") != CURSOR_FORMAT \
                or not isinstance(document.get("sources"), dict):
            raise FormatError(f"{path!r} is not an fgraph sync cursor file",
                              "delete it; sync then reads every source again, skipping what the target has")
        self.sources = document["sources"]

    def save(self, source: Source) -> None:
        self.sources[source.key] = source.entry()
        text = dumps({"fgraph": CURSOR_FORMAT, "sources": self.sources}) + "\n"
        write_atomically(self.path, text.encode("utf-8"), "sync cursor")


@contextlib.contextmanager
def target_lock(target: str):
    """Hold ``<target>.sync.lock`` for the run: one syncer per target (POSIX advisory lock)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no advisory locks: rely on apply's idempotency alone
        yield
        return
    path = str(target) + LOCK_SUFFIX
    fd = open_sidecar(path, "sync lock")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Conflict(f"another `fgraph sync` is writing into {target!r} (it holds {path!r})",
                           "wait for it to finish, or stop it; one syncer per target") from None
        yield
    finally:
        os.close(fd)


def _event_of(line: str):
    try:
        record = loads(line)
    except FgraphError:
        return None
    return record.get("event") if isinstance(record, dict) else None


def _located(exc: FgraphError, source: Source, since: int, through: int) -> FgraphError:
    """``exc`` raised by applying a batch of ``source``, restated to name the source and the event."""
    number, message = exc.line, exc.message
    event = tx = None
    if number is not None:
        prefix = f"line {number}: "
        message = message[len(prefix):] if message.startswith(prefix) else message
        found = next(itertools.islice(source.db.iter_tx_events(since, through), number - 1, None), None)
        if found is not None:
            tx, event = found[0], _event_of(found[1])
    where = f"event {event} (source tx {tx})" if event is not None else f"the events after source tx {since}"
    hint = exc.hint
    if source.stand_ins is not None and source.stand_ins.received_excisions():
        hint += (f"; if {source.path!r} has not yet carried out an excision this store has, it may still hold "
                 "what was erased: sync it from its own sources first, then retry (docs/forgetting.md F1)")
    located = rewrap(exc, message, before=f"sync from {source.path!r} stopped at {where}; nothing of its batch was "
                     f"written, the target has this source through tx {since}: ", hint=hint)
    located.source, located.event, located.source_tx = source.path, event, tx
    return located


class _Run:
    """The ordinary event lines of a batch up to the first redacted one (which ``apply`` refuses):
    a stub or an excision event stops the run and is kept in ``special``. It reads ``(tx, line)``
    pairs and keeps them, so the position after it needs no lookup."""

    def __init__(self, first: tuple, pairs, limit: int):
        self.first, self.pairs, self.limit = first, pairs, limit
        self.count, self.last, self.special = 0, first, None

    def __iter__(self):
        self.count = 1
        yield self.first[1]
        while self.count < self.limit:
            pair = next(self.pairs, None)
            if pair is None:
                return
            self.count += 1
            if is_excision_line(pair[1]):
                self.special = pair
                return
            self.last = pair
            yield pair[1]


def _redacted(source: Source, target, tx: int, line: str) -> None:
    """A redacted line of the source (its transaction ``tx``): an excision is carried out on the
    target (travels on, F1); a stub is skipped when the target holds the event or nothing of it
    survives at the source."""
    record = loads(line)
    event = record["event"]
    if "redacts" in record:
        excision = source.db.excision_record(event)
        sealed, seal = source.seal_excision(excision)
        where = f"{source.path!r}, the excision record of event {event} (source tx {tx})"
        source.trust.check(source.store, seal, FILE_SCOPE, "excision", "excision:" + event, None, sealed, where)
        source.excisions.append(target.carry_out_excision(
            excision, source.path, allow=source.trust.allow_erasure(source.store, where, source=source.db)))
        return
    if target.holds_event(event):
        source.counts["redacted_held"] += 1
        source.anchor = (tx, event)
        return
    remainder = source.db.redacted_remainder(event)
    try:
        summary = apply_noting(target, source.trust, source.store, [remainder])
    except FgraphError as exc:
        raise rewrap(exc, before=f"sync from {source.path!r} stopped at event {event} (source tx {tx}): the "
                     "remainder of that redacted event cannot be applied: ",
                     hint=f"restore this store from a snapshot of the source (`fgraph --db {source.path} snapshot "
                     "> s.ndjson`, then `fgraph --db NEW restore s.ndjson`) and sync into that") from exc
    source.counts["remainders"] += summary["applied"]
    source.counts["redacted_skipped"] += 1


def sync_batch(source: Source, target, through: int, batch_size: int) -> int:
    """Apply the next at most ``batch_size`` events of ``source`` up to ``through``, each run of
    ordinary events in one target transaction, a redacted line between two runs handled on its
    own; returns how many were read (0: nothing new, and the target was not touched)."""
    pairs = source.db.iter_tx_events(source.position, through)
    read = 0
    try:
        while read < batch_size:
            first = next(pairs, None)
            if first is None:
                break
            if is_excision_line(first[1]):
                read += 1
                _redacted(source, target, *first)
                source.position = first[0]
                source.counts["events"] += 1
                continue
            since = source.position
            run = _Run(first, pairs, batch_size - read)
            try:
                summary = apply_noting(target, source.trust, source.store, iter(run), source.stand_ins.covers)
            except FgraphError as exc:
                raise _located(exc, source, since, through) from exc
            read += run.count
            source.position = run.last[0]
            source.anchor = (source.position, _event_of(run.last[1]))
            for key in ("already_applied", "applied", "events", "noop", "stood_in"):
                source.counts[key] += summary[key]
            if run.special is not None:
                _redacted(source, target, *run.special)
                source.position = run.special[0]
                source.counts["events"] += 1
    finally:
        pairs.close()
    if read:
        source.counts["batches"] += 1
    return read


def sync_round(sources: list, target, cursors: Cursors, batch_size: int, stop) -> int:
    """Bring every source up to its latest transaction as of now, batch by batch in turn; returns
    the number of events read (stops early, between batches, when ``stop()`` is true)."""
    read = 0
    for source in sources:
        source.latest = source.db.latest_tx()
    active = [s for s in sources if s.position < s.latest and s.refused is None]
    while active and not stop():
        for source in list(active):
            if stop():
                break
            try:
                count = sync_batch(source, target, source.latest, batch_size)
            except Refused as refused:      # set aside for this run; the other sources go on
                source.refused = refused
                cursors.save(source)
                active.remove(source)
                continue
            if count:
                cursors.save(source)
                read += count
            if count < batch_size or source.position >= source.latest:
                active.remove(source)
    return read


def _wait(seconds: float, stop) -> None:
    end = time.monotonic() + seconds
    while not stop():
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, STOP_CHECK))


def sync(sources, target: str, *, batch_size: int = SYNC_BATCH, follow: bool = False,
         interval: float = SYNC_INTERVAL, stop=None, trust: str | None = None, accept_keys=(),
         signing_key: str | None = None) -> dict:
    """Apply every new event of each store in ``sources`` to ``target`` (created if missing).

    Without ``follow`` it returns once each source is synced up to its latest transaction at the
    start; with ``follow`` it keeps polling every ``interval`` seconds until ``stop()`` is true.
    Returns the summary: totals, the target's ``basis_tx`` and one report per source. Excisions
    are sealed by ``signing_key`` (one source) or each source's own key and checked against the
    target's pins, ``accept_keys`` (``STORE:KEY``) or the ``trust`` policy file (T1–T3).
    """
    sources = [str(s) for s in sources]
    target = str(target)
    strict_int(batch_size, "batch_size={value!r} is invalid", "pass a positive number of events", low=1)
    positive_number(interval, "interval={value!r} is invalid", "pass a positive, finite number of seconds")
    check_paths(sources, target)
    if signing_key is not None and len(sources) > 1:
        raise ValueTypeError("--signing-key names the key of one store, and several are synced",
                             "sync each store on its own, or let each use its own <db>.signing-key")
    stop = stop or (lambda: False)
    from fgraph.db import connect  # here, not at the top: `fgraph --help` imports this module
    with contextlib.ExitStack() as stack:
        opened = []
        for path in sources:   # every source first: a missing one must not leave a new empty target
            if not os.path.exists(path):
                raise NotFound(f"source {path!r} does not exist", "check the path of --from")
            try:
                handle = stack.enter_context(connect(path, read_only=True))
            except FormatError as exc:
                raise rewrap(exc, before=f"source {path!r}: ", hint="--from must name an fgraph store") from exc
            opened.append(Source(path, handle))
        # The lock and the cursor sit beside the file itself: a second name for the target (a
        # symbolic link) must meet the same lock, and no sidecar is written through a link. Both
        # are checked before the target is opened, so a refused run creates no empty target.
        beside = os.path.realpath(target)
        refuse_sidecar_name(target, "sync target")   # never a sidecar's name: no lock or cursor made beside one
        stack.enter_context(target_lock(beside))
        cursors = Cursors(cursor_path(beside))
        trusted = Trust(beside, policy=trust, accept=accept_keys)
        db = stack.enter_context(connect(target))
        stand_ins = db.stand_ins()
        for source in opened:
            source.resume(cursors.sources.get(source.key), db)
            source.stand_ins, source.trust, source.signing_key = stand_ins, trusted, signing_key
        while True:
            read = sync_round(opened, db, cursors, batch_size, stop)
            if not follow or stop():
                break
            if not read:
                _wait(interval, stop)
        refused = [s.refused for s in opened if s.refused is not None]
        if refused:
            raise refused_summary(refused, target)
        totals = {key: sum(s.counts[key] for s in opened)
                  for key in ("already_applied", "applied", "events", "noop", "redacted_held", "redacted_skipped",
                              "remainders", "stood_in")}
        return {**totals, "basis_tx": db.latest_tx(), "excisions": [e for s in opened for e in s.excisions],
                "target": target, "sources": [s.report() for s in opened]}
