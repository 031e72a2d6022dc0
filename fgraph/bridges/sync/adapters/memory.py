"""The in-process log adapter: ``memory://NAME`` (issue 46; docs/replication.md "Adding a log adapter").

A complete implementation of ``fgraph.bridges.sync.log.Log`` kept in this process's memory. It is
for tests (the contract test ``tests/bridges/test_adapters_contract.py`` runs every adapter through
the same checks, this one always) and it is the template of a new adapter: each method below says
which guarantee of the log it provides, and a new engine has to provide the same ones.

``memory://NAME`` names one process-wide log, so two ``sync`` calls in one process (a publisher,
then a consumer) meet the same records; nothing survives the process. Each ``open_log`` returns
a new handle on it, as a new connection to a server would be: handles share the records and the
durable consumers, and each publisher handle keeps its own idea of where a store's subject ends.

What it keeps, as NATS JetStream does (``adapters/nats.py``):

- one sequence over the whole log; each record on a **subject**: ``(store,)`` for a store's
  events, ``(store, "excision")`` and ``(store, "remainder", event)`` for the records of forgetting;
- **dedup by message id** (the event UUID): a record whose id the log has seen is not stored
  again, for the log's lifetime (JetStream forgets after its duplicate window);
- **expected last sequence**: an append is refused with ``Conflict`` unless the publisher's last
  known sequence of the store's subject is still the subject's last, so a record never lands
  after a gap and two publishers of one store cannot interleave;
- **seals** (decision T1 in docs/forgetting.md): each record keeps the seal it was appended or put
  with and hands it out with the record (``Record.seal``, ``SealedLine.seal``); ``stream`` is the
  log's own name, which seals cover;
- **durable consumers** by name, explicit acks: a record delivered and not acknowledged within
  ``ack_wait`` seconds is delivered again; ``defer`` hands one back for ``DEFER_DELAY`` seconds;
- **foreign messages** (issue 48 item 3): what another application publishes on the log
  (``publish_foreign``, a test's tool) is delivered as a ``Record`` with ``foreign`` saying why,
  and a publisher steps over one on its store's subject (``last``, ``append``).
"""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

from fgraph.core.errors import Conflict, NotFound, ValueTypeError
from fgraph.bridges.sync.adapters import ADAPTERS
from fgraph.bridges.sync.log import Record, SealedLine
from fgraph.bridges.sync.quarantine import not_a_record, preview
from fgraph.bridges.sync.signing import Seal

NAME = re.compile(r"[A-Za-z0-9_-]{1,200}")
DEFAULT_ACK_WAIT = ADAPTERS["memory"].options["ack_wait"]   # the registry line states what `sync` defaults to
DEFER_DELAY = 0.05        # seconds before a record handed back is delivered again
SETTINGS = ()             # it reads no environment variable (docs/settings.md lists those that do)

_LOGS: dict = {}          # name → _Stream: the process-wide logs
_LOGS_LOCK = threading.Lock()


@dataclass
class _Message:
    """One stored record: its place in the log's sequence, its subject and what a consumer gets."""

    seq: int
    subject: tuple
    line: str
    msg_id: str
    store: str
    prev: str | None
    kind: str
    seal: Seal | None = None
    raw: bytes | None = None      # a foreign message's bytes (``MemoryLog.publish_foreign``); None for fgraph's
    headers: dict | None = None

    @property
    def where(self) -> str:
        return f"subject {'.'.join(self.subject)}, sequence {self.seq}"

    def of_store(self, store: str) -> bool:
        """An event record of ``store`` (not another application's message on its subject)."""
        return self.raw is None and self.subject == (store,) and self.kind == "event"


@dataclass
class _Consumer:
    """A durable consumer: what it acknowledged and, for what is delivered but not acknowledged,
    when it is due again."""

    acked: set = field(default_factory=set)
    due: dict = field(default_factory=dict)      # seq → monotonic time of its next delivery


class _Stream:
    """The records of one named log, shared by every handle on it."""

    def __init__(self, name: str):
        self.name = name
        self.messages: dict[int, _Message] = {}  # seq → message, in sequence order; erased ones removed
        self.ids: set = set()
        self.last_seq = 0
        self.consumers: dict[str, _Consumer] = {}
        self.changed = threading.Condition()

    def add(self, subject: tuple, line: str, msg_id: str, store: str, prev, kind: str, seal: Seal | None, *,
            raw: bytes | None = None, headers: dict | None = None) -> int:
        self.last_seq += 1
        self.messages[self.last_seq] = _Message(self.last_seq, subject, line, msg_id, store, prev, kind, seal,
                                                raw, headers)
        if raw is None:
            self.ids.add(msg_id)
        self.changed.notify_all()
        return self.last_seq

    def last_on(self, subject: tuple, store: str | None = None) -> _Message | None:
        """The last message on ``subject``; with ``store``, its last event record of that store."""
        for message in reversed(self.messages.values()):
            if message.subject == subject and (store is None or message.of_store(store)):
                return message
        return None


def parse_url(url: str) -> str:
    """``memory://NAME`` → NAME."""
    parts = urllib.parse.urlsplit(str(url))
    if parts.scheme != "memory" or not NAME.fullmatch(parts.netloc) or parts.path.strip("/") or parts.query:
        raise ValueTypeError(f"{url!r} is not a memory log URL",
                             "write memory://NAME, NAME being letters, digits, - and _")
    return parts.netloc


def open_log(url: str, *, create_stream: bool = False, ack_wait: float = DEFAULT_ACK_WAIT) -> MemoryLog:
    """The adapter's entry (``fgraph.bridges.sync.adapters``): a new handle on the log ``url`` names."""
    return MemoryLog.open(url, create_stream=create_stream, ack_wait=ack_wait)


def drop(url: str) -> None:
    """Forget the log ``url`` names (a test ends with it; the next ``open_log`` must create it again)."""
    with _LOGS_LOCK:
        _LOGS.pop(parse_url(url), None)


class MemoryLog:
    """One handle on a process-wide memory log: the whole ``Log`` interface."""

    def __init__(self, stream: _Stream, name: str, *, ack_wait: float = DEFAULT_ACK_WAIT):
        self.name = name
        self.stream = stream.name                 # what seals cover: the log's own name, not the URL
        self.ack_wait = ack_wait
        self._stream = stream
        self._seq: dict[str, int] = {}           # store → last sequence of its subject this handle knows

    @classmethod
    def open(cls, url: str, *, create_stream: bool = False, ack_wait: float = DEFAULT_ACK_WAIT) -> MemoryLog:
        """A new handle (of this class: a test's subclass too) on the process-wide log ``url``
        names; a log not yet in this process is created with ``create_stream``, else ``NotFound``
        (as a missing JetStream stream is)."""
        name = parse_url(url)
        with _LOGS_LOCK:
            stream = _LOGS.get(name)
            if stream is None:
                if not create_stream:
                    raise NotFound(f"memory log {name!r} does not exist in this process",
                                   "pass --create-stream (create_stream=True) to make it")
                stream = _LOGS[name] = _Stream(name)
        return cls(stream, str(url), ack_wait=ack_wait)

    def close(self) -> None:
        """Nothing to release: the records stay for the next handle."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def order(self, ready: list) -> list:
        """The order in which records ready for a consumer are handed out: the log's own. A test
        subclass may reorder them to prove a consumer that must survive a log that does not keep
        order (redeliveries overtaking newer records, as after a restart)."""
        return ready

    # -- publishing: ordered, deduplicated, gap-free per store
    def last(self, store: str) -> str | None:
        """The id of the last event record under ``store`` (what a publisher resumes after)."""
        with self._stream.changed:
            last, message = self._stream.last_on((store,)), self._stream.last_on((store,), store)
            self._seq[store] = last.seq if last else 0      # a foreign message after it is stepped over
            return message.msg_id if message else None

    def append(self, store: str, source: str, line: str, event: str, prev: str | None, *,
               seal: Seal | None = None) -> bool:
        """Append an event under ``store`` after the last one this handle knows; False for an id
        the log already holds (checked first, as JetStream does); ``Conflict`` when the subject
        moved under this publisher: an event record of the store came after the last one it knows
        (foreign messages that came are stepped over; consumers quarantine them)."""
        if store not in self._seq:
            self.last(store)
        with self._stream.changed:
            last = self._stream.last_on((store,))
            if event in self._stream.ids:
                if last is not None and last.msg_id == event:   # another handle put it last: expect it next
                    self._seq[store] = last.seq
                return False
            since = [m for m in self._stream.messages.values() if m.subject == (store,) and m.seq > self._seq[store]]
            if since and not any(m.of_store(store) for m in since):
                self._seq[store] = since[-1].seq
            if (last.seq if last else 0) != self._seq[store]:
                raise Conflict(f"the subject of store {store} ({source!r}) in {self.name!r} moved under this "
                               "publisher", "another `fgraph sync` publishes the same store; run one per store")
            self._seq[store] = self._stream.add((store,), line, event, store, prev, "event", seal)
            return True

    def publish_foreign(self, subject: str, data: bytes, headers: dict | None = None) -> int:
        """What another application publishing on the log does (a test's tool): ``data`` on
        ``subject`` (after the log's name: "other", or a store id), not an fgraph record."""
        with self._stream.changed:
            return self._stream.add(tuple(subject.split(".")), "", "", "", None, "foreign", None, raw=bytes(data),
                                    headers=dict(headers or {}))

    # -- forgetting: side subjects, delivered to consumers too, outside the event order
    def put(self, store: str, kind: str, key: str, line: str, msg_id: str, *, seal: Seal | None = None) -> bool:
        """Publish an excision record (``key`` unused) or a remainder (``key`` its redacted event)."""
        if kind not in ("excision", "remainder"):
            raise ValueTypeError(f"{kind!r} is not a kind of side record", "put an 'excision' or a 'remainder'")
        subject = (store, kind) if kind == "excision" else (store, kind, key)
        with self._stream.changed:
            if msg_id in self._stream.ids:
                return False
            self._stream.add(subject, line, msg_id, store, None, kind, seal)
            return True

    def excision_records(self, store: str) -> list[str]:
        with self._stream.changed:
            return [SealedLine.of(m.line, m.seal) for m in self._stream.messages.values()
                    if m.subject == (store, "excision")]

    def remainder(self, store: str, event: str) -> str | None:
        with self._stream.changed:
            message = self._stream.last_on((store, "remainder", event))
            return SealedLine.of(message.line, message.seal) if message else None

    def erase(self, store: str, events: set) -> int:
        """Delete ``store``'s event records that carry ``events`` (their ids stay known, so a
        re-publish is still a duplicate); this handle's view of the subject's end follows."""
        with self._stream.changed:
            doomed = [seq for seq, m in self._stream.messages.items() if m.subject == (store,) and m.msg_id in events]
            for seq in doomed:
                del self._stream.messages[seq]
            last = self._stream.last_on((store,))
            self._seq[store] = last.seq if last else 0
            return len(doomed)

    def erase_report(self) -> dict:
        """A log in memory keeps no other copy of what ``erase`` deleted."""
        return {"status": "erased", "replication_logs": "none", "detail": "a log in this process's memory keeps "
                "no other copy of a record"}

    def lines(self, store: str) -> list[str]:
        """The event lines under ``store``, in order (what a test compares with the store's tail)."""
        with self._stream.changed:
            return [m.line for m in self._stream.messages.values() if m.of_store(store)]

    # -- consuming: durable, explicit acks, redelivery after ack_wait
    def _ready(self, consumer: _Consumer, now: float) -> list[_Message]:
        return [m for seq, m in self._stream.messages.items()
                if seq not in consumer.acked and consumer.due.get(seq, now) <= now]

    def fetch(self, consumer: str, limit: int, wait: float) -> list[Record]:
        """At most ``limit`` records not acknowledged by ``consumer`` and not awaiting their
        ack or deferral; waits at most ``wait`` seconds for one."""
        deadline = time.monotonic() + max(0.0, wait)
        with self._stream.changed:
            state = self._stream.consumers.setdefault(consumer, _Consumer())
            while True:
                now = time.monotonic()
                ready = self.order(self._ready(state, now))[:limit]
                if ready or now >= deadline:
                    break
                upcoming = [t for seq, t in state.due.items() if t > now and seq in self._stream.messages]
                self._stream.changed.wait(min([deadline, *upcoming]) - now)
            for message in ready:
                state.due[message.seq] = now + self.ack_wait
            return [self._record(consumer, m) for m in ready]

    def _record(self, consumer: str, m: _Message) -> Record:
        """A message as the consumer gets it; a foreign one with ``foreign`` saying why, as NATS's."""
        subject = ".".join((self.stream, *m.subject))
        if m.raw is not None:
            why = not_a_record(self.stream, subject, m.headers or {}, m.raw) or "another application published it"
            return Record(line=preview(m.raw), event="", store="", prev=None, handle=(consumer, m.seq), kind="foreign",
                          where=m.where, subject=subject, sequence=m.seq, foreign=why, size=len(m.raw))
        return Record(line=m.line, event=m.msg_id, store=m.store, prev=m.prev, handle=(consumer, m.seq),
                      kind=m.kind, seal=m.seal, where=m.where, subject=subject, sequence=m.seq)

    def ack(self, records: list[Record]) -> None:
        with self._stream.changed:
            for record in records:
                consumer, seq = record.handle
                state = self._stream.consumers.setdefault(consumer, _Consumer())
                state.acked.add(seq)
                state.due.pop(seq, None)

    def defer(self, records: list[Record]) -> None:
        with self._stream.changed:
            again = time.monotonic() + DEFER_DELAY
            for record in records:
                consumer, seq = record.handle
                state = self._stream.consumers.setdefault(consumer, _Consumer())
                if seq not in state.acked:
                    state.due[seq] = again
            self._stream.changed.notify_all()

    def pending(self, consumer: str) -> int:
        """Records ``consumer`` has not acknowledged, delivered or not (erased ones no longer count)."""
        with self._stream.changed:
            state = self._stream.consumers.setdefault(consumer, _Consumer())
            return sum(1 for seq in self._stream.messages if seq not in state.acked)
