"""The NATS JetStream adapter of ``fgraph.bridges.sync.log`` (issue 32 item 1, docs/replication.md).

``nats://host:4222/STREAM`` (or ``tls://…``) names a server and a stream. Each source store
publishes on the subject ``STREAM.<store id>``; a record is the event/1 line's bytes with the
headers

- ``Nats-Msg-Id``: the event UUID, so JetStream's duplicate window turns a re-publish into a no-op;
- ``Fgraph-Store``: the source store's id; ``Fgraph-Prev``: the source's previous event (absent
  for its first);
- ``Nats-Expected-Last-Subject-Sequence``: the sequence of the last record on the subject, so a
  record can never land after a gap, nor two publishers of one store interleave (``Conflict``);
- ``Fgraph-Key``, ``Fgraph-Sig`` and ``Fgraph-Chain``: the record's seal, the store's key id, its
  signature and the link of the record before it (on side records too; decision T1 in
  docs/forgetting.md), covering the stream's name (``stream``).

A target reads through the durable pull consumer ``fgraph-<target id>`` (explicit acks). The
``nats-py`` package is the extra ``fgraph[nats]`` and is imported only when a URL is used.
Credentials never come from the command line: a creds file, user and password or a token come
from the settings this module declares (``SETTINGS``, shown in docs/settings.md). They leave the
process only inside a verified TLS session, or to this machine (a loopback address or
``localhost``), or when the user passes ``--insecure-plaintext-credentials``; a ``tls://`` URL never
falls back to plain text (issue 47 item 2, docs/replication.md "TLS and credentials").
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging

from fgraph.core.errors import Conflict, FgraphError, NotFound, Unsupported
from fgraph.bridges.sync.adapters import ADAPTERS, nats_cluster_forget as cluster_forget, nats_subjects as subjects
from fgraph.bridges.sync.adapters import nats_errors, nats_urls
from fgraph.bridges.sync.adapters.nats_tls import (CA, CREDS, PASSWORD, SETTINGS, TOKEN, USER, auth,  # noqa: F401
                                                   check_plaintext, guarded_client, has_credentials, tls_context)
from fgraph.bridges.sync.log import LogUnavailable, Record, SealedLine
from fgraph.bridges.sync.quarantine import not_a_record, preview
from fgraph.bridges.sync.signing import Seal

STREAM_NAME = nats_urls.STREAM_NAME
CALL_TIMEOUT = 5.0        # seconds one request to the server may take before it counts as unavailable
CONNECT_TIMEOUT = nats_urls.CONNECT_TIMEOUT
DEFAULT_ACK_WAIT = ADAPTERS["nats"].options["ack_wait"]   # the registry line states what `sync` defaults to
DEFER_DELAY = 0.2         # seconds before a record handed back is delivered again
STORE, PREV, MSG_ID, EXPECTED = "Fgraph-Store", "Fgraph-Prev", "Nats-Msg-Id", "Nats-Expected-Last-Subject-Sequence"
KIND = "Fgraph-Kind"      # absent on event/1 records; "excision" or "remainder" on the records of forgetting
SEAL_KEY, SEAL_SIG, SEAL_CHAIN = "Fgraph-Key", "Fgraph-Sig", "Fgraph-Chain"   # a record's seal (sync.signing)
WRONG_LAST_SEQUENCE = 10071
SEQUENCE_NOT_FOUND = 10043   # a delete of a record already deleted
CREDENTIALS_HINT = nats_errors.CREDENTIALS_HINT
UNREACHABLE_HINT = nats_errors.UNREACHABLE_HINT

def _nats():
    try:
        import nats
        import nats.errors
        import nats.js.api
        import nats.js.errors
    except ImportError:
        raise Unsupported("syncing through NATS needs the nats-py package",
                          "install the extra: pip install 'fgraph[nats]'") from None
    return nats


def parse_url(url: str) -> tuple[str, str]:
    """``nats://host:port/STREAM`` or ``nats://a:4222,b:4223/STREAM`` → (servers as one URL, stream)
    (``nats_urls``: every seed checked, a bad port or host a ``ValueTypeError``)."""
    _, servers, stream = nats_urls.parse(url)
    return nats_urls.display(servers), stream


def _seal_headers(seal: Seal | None) -> dict:
    if seal is None:
        return {}
    return {SEAL_KEY: seal.key, SEAL_SIG: seal.sig, **({SEAL_CHAIN: seal.chain} if seal.chain else {})}


def _seal_of(headers) -> Seal | None:
    key, sig, chain = headers.get(SEAL_KEY), headers.get(SEAL_SIG), headers.get(SEAL_CHAIN, "")
    return Seal(key, sig, chain) if isinstance(key, str) and isinstance(sig, str) and isinstance(chain, str) else None


class NatsLog:
    """One connection to a JetStream stream, used synchronously (it owns its event loop)."""

    def __init__(self, url: str, *, create: bool = False, replicas: int = 1, max_age: float = 0,
                 ack_wait: float = DEFAULT_ACK_WAIT, insecure_plaintext_credentials: bool = False):
        self.name = str(url)
        scheme, self.servers, self.stream = nats_urls.parse(url)
        self.server = nats_urls.display(self.servers)   # every seed, for messages
        self.ack_wait = ack_wait
        self._login = auth()
        check_plaintext(self.server, self._login, insecure_plaintext_credentials)   # before any lookup or connection
        self._nats = _nats()
        self._tls = tls_context(self._login.get("ca")) if self._login.get("ca") or scheme == "tls" else None
        self._client, self._refused = guarded_client(self._nats, credentials=has_credentials(self._login),
                                                      insecure=insecure_plaintext_credentials)
        self._seen: collections.deque = collections.deque(maxlen=16)   # the client's last errors (error_cb)
        self._erase_report: dict = {}
        # asyncio's TLS transport logs a harmless warning at each close ("returning true from
        # eof_received() …"); the CLI's stderr carries one-line errors only
        logging.getLogger("asyncio").setLevel(logging.ERROR)
        self._loop = asyncio.new_event_loop()
        self._nc = self._js = None
        self._seq: dict[str, int] = {}
        self._subs: dict = {}
        self._stream_check: tuple | None = None   # the stream's check, until JetStream could answer it
        try:
            self._run(self._connect(), CONNECT_TIMEOUT * (len(self.servers) + 2))
            self._stream_check = (create, replicas, max_age)
            # the stream is checked now; without a JetStream leader, again at the first call, which
            # publish and consume retry for their bound
            with contextlib.suppress(LogUnavailable):
                self._run(asyncio.sleep(0))
        except LogUnavailable:
            self.close()
            raise NotFound(f"NATS server {self.server} is unreachable", UNREACHABLE_HINT) from None
        except BaseException:
            self.close()
            raise

    # -- plumbing (errors: nats_errors; URLs: nats_urls; TLS and credentials: nats_tls)
    def _refusal(self) -> Unsupported | None:
        """The error for the last server the guard refused (``nats_tls.guarded_client``), None when none was."""
        return nats_errors.guard_refusal([e for e in self._seen if isinstance(e, self._refused)], self.server)

    def _run(self, coro, timeout: float = CALL_TIMEOUT):
        """Run ``coro`` (after the stream's check, while that waits for a JetStream leader); every
        exception of the client becomes a typed error (``nats_errors``), an outage ``LogUnavailable``."""
        try:
            if self._stream_check is not None:
                check = nats_urls.check_stream(self._nats, self._nc, self._js, self.stream, self.server,
                                               *self._stream_check)
                self._loop.run_until_complete(asyncio.wait_for(check, CALL_TIMEOUT * 2))
                self._stream_check = None
            return self._loop.run_until_complete(asyncio.wait_for(coro, timeout))
        except Exception as exc:
            if isinstance(exc, FgraphError):
                raise
            typed = nats_errors.translate(exc, self.server, LogUnavailable)
            if typed is None:
                raise
            if isinstance(typed, LogUnavailable):
                typed = self._refusal() or typed   # a reconnection the guard refused: not an outage to wait out
            raise typed from None
        finally:
            coro.close()   # not started when the stream's check failed: no "never awaited" warning

    async def _connect(self):
        errors, seen = self._nats.errors, self._seen

        async def quiet(exc):   # the client's own error reports would go to stderr through logging
            seen.append(exc)
        self._nc = self._client()
        try:
            options = nats_urls.options(self.servers, self._login, self._tls)
            await asyncio.wait_for(self._nc.connect(**options, error_cb=quiet), CONNECT_TIMEOUT * (len(self.servers) + 1))
            # once connected, ride out restarts and elections, on any seed or server the cluster
            # announces: publish and consume bound the wait (their retry)
            self._nc.options["max_reconnect_attempts"] = -1
        except (errors.NoServersError, OSError, asyncio.TimeoutError) as exc:
            raise nats_errors.connect_failure(exc, list(seen), self._refusal(), self.server, LogUnavailable) from None
        self._js = self._nc.jetstream(timeout=CALL_TIMEOUT)

    def close(self) -> None:
        if self._nc is not None and not self._nc.is_closed:
            try:
                self._loop.run_until_complete(asyncio.wait_for(self._nc.close(), CALL_TIMEOUT))
            except Exception:   # closing a connection to a dead server: nothing left to release
                pass
        self._loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _subject(self, store: str) -> str:
        return f"{self.stream}.{store}"

    # -- the Log interface
    def last(self, store: str) -> str | None:
        """The id of ``store``'s last event record on its subject; a foreign message after it (another
        application's: quarantine.py) is stepped over, and the next append expects the subject's
        real last sequence (``nats_subjects``)."""
        subject, errors = self._subject(store), self._nats.js.errors

        async def go():
            try:
                message = await self._js.get_last_msg(self.stream, subject)
            except errors.NotFoundError:
                return 0, None
            top = message.seq            # what the next append expects, a foreign message's included
            if not self._of_store(message, store):
                message = await subjects.last_before(self._js, errors.NotFoundError, self.stream, subject, top,
                                                     lambda m: self._of_store(m, store))
            return top, None if message is None else message.headers[MSG_ID]
        self._seq[store], event = self._run(go(), CALL_TIMEOUT * 4)
        return event

    @staticmethod
    def _of_store(message, store: str) -> bool:
        """An event record of ``store`` (not a side record, not another application's message)."""
        headers = message.headers or {}
        return headers.get(STORE) == store and bool(headers.get(MSG_ID)) and KIND not in headers

    def append(self, store: str, source: str, line: str, event: str, prev: str | None, *,
               seal: Seal | None = None) -> bool:
        """Append after the subject's last record; a foreign message that came onto the subject
        meanwhile is stepped over (consumers quarantine it), an fgraph record of the store is a
        ``Conflict``: another publisher of the same store."""
        if store not in self._seq:
            self.last(store)
        for _ in range(subjects.FOREIGN_RETRIES):
            headers = {MSG_ID: event, STORE: store, EXPECTED: str(self._seq[store]), **_seal_headers(seal)}
            if prev is not None:
                headers[PREV] = prev
            try:
                ack = self._run(self._js.publish(self._subject(store), line.encode("utf-8"), stream=self.stream,
                                                 headers=headers))
            except self._nats.js.errors.APIError as exc:
                if exc.err_code != WRONG_LAST_SEQUENCE:
                    raise
                after = self._run(subjects.foreign_since(self._js, self._nats.js.errors.NotFoundError, self.stream,
                                                         self._subject(store), self._seq[store],
                                                         lambda m: self._of_store(m, store)), CALL_TIMEOUT * 4)
                if after is not None:      # only foreign messages came: append after them
                    self._seq[store] = after
                    continue
                if self._caught_up(store, event):   # it is there already: the duplicate it is (issue 48 item 2)
                    return False
                raise Conflict(f"the subject of store {store} ({source!r}) in {self.name!r} moved under this publisher",
                               "another `fgraph sync` publishes the same store; run one per store") from None
            if not ack.duplicate:
                self._seq[store] = ack.seq
            elif ack.seq > self._seq[store]:        # appended after what this handle expected: by another run
                self._caught_up(store, event)
            return not ack.duplicate
        raise Conflict(f"foreign messages keep arriving on the subject of store {store} ({self._subject(store)}) in "
                       f"{self.name!r}", "stop the application that publishes there: a store's subject is for "
                       "`fgraph sync` alone")

    def _subscription(self, consumer: str):
        if consumer not in self._subs:
            config = self._nats.js.api.ConsumerConfig(ack_wait=self.ack_wait, max_ack_pending=20_000)
            self._subs[consumer] = self._run(self._js.pull_subscribe(f"{self.stream}.>", durable=consumer,
                                                                     stream=self.stream, config=config))
        return self._subs[consumer]

    def fetch(self, consumer: str, limit: int, wait: float) -> list[Record]:
        """At most ``limit`` records; a message that is no fgraph record comes as a ``Record`` with
        ``foreign`` saying why (quarantine.py) and a preview of its bytes as ``line``."""
        subscription = self._subscription(consumer)

        async def go():
            try:
                return await subscription.fetch(limit, timeout=wait)
            except (self._nats.errors.TimeoutError, asyncio.TimeoutError):
                return []
        out = []
        for message in self._run(go(), wait + CALL_TIMEOUT):
            headers, data, subject = message.headers or {}, message.data or b"", message.subject
            seq = message.metadata.sequence.stream
            where = f"{self.name}, subject {subject}, sequence {seq}"
            foreign = not_a_record(self.stream, subject, headers, data)
            if foreign:
                out.append(Record(line=preview(data), event=str(headers.get(MSG_ID) or ""), store="", prev=None,
                                  handle=message, kind="foreign", where=where, subject=subject, sequence=seq,
                                  foreign=foreign, size=len(data)))
                continue
            out.append(Record(line=data.decode("utf-8"), event=headers[MSG_ID], store=headers[STORE],
                              prev=headers.get(PREV), handle=message, kind=headers.get(KIND, "event"),
                              seal=_seal_of(headers), where=where, subject=subject, sequence=seq))
        return out

    def ack(self, records: list[Record]) -> None:
        already = self._nats.errors.MsgAlreadyAckdError

        async def go():
            # the last acknowledgement waits for the server's reply: the consumer processes a
            # connection's acks in order, so once it answers every ack before it is recorded too and
            # `pending` counts none of them (a plain ack is only queued when the call returns)
            for i, record in enumerate(records):
                try:
                    if i == len(records) - 1:
                        await record.handle.ack_sync(timeout=CALL_TIMEOUT)
                    else:
                        await record.handle.ack()
                except already:   # acknowledged by an attempt a reconnection interrupted: done already
                    continue
            await self._nc.flush()
        self._run(go())

    def defer(self, records: list[Record]) -> None:
        already = self._nats.errors.MsgAlreadyAckdError

        async def go():
            for record in records:
                try:
                    await record.handle.nak(delay=DEFER_DELAY)
                except already:   # handed back by an attempt a reconnection interrupted
                    continue
            await self._nc.flush()
        self._run(go())

    # -- forgetting (docs/forgetting.md F2): side subjects of a store, outside its event order
    def put(self, store: str, kind: str, key: str, line: str, msg_id: str, *, seal: Seal | None = None) -> bool:
        """Publish an excision record (``key`` "excision") or a remainder (``key`` its redacted
        event) under ``STREAM.<store>.<kind>[.<key>]``; False when the log already had it."""
        subject = f"{self._subject(store)}.{kind}" + ("" if kind == "excision" else f".{key}")
        ack = self._run(self._js.publish(subject, line.encode("utf-8"), stream=self.stream,
                                         headers={MSG_ID: msg_id, STORE: store, KIND: kind, **_seal_headers(seal)}))
        return not ack.duplicate

    def excision_records(self, store: str) -> list[str]:
        """Every excision record published for ``store``, oldest first."""
        errors = self._nats.js.errors

        async def go():
            out, seq = [], 1
            while True:
                try:
                    message = await self._js.get_msg(self.stream, seq=seq, subject=f"{self._subject(store)}.excision",
                                                     next=True)
                except errors.NotFoundError:
                    return out
                out.append(SealedLine.of(message.data.decode("utf-8"), _seal_of(message.headers or {})))
                seq = message.seq + 1
        return self._run(go(), CALL_TIMEOUT * 4)

    def remainder(self, store: str, event: str) -> str | None:
        """The remainder record of ``store``'s redacted event ``event``, None when there is none."""
        async def go():
            try:
                message = await self._js.get_last_msg(self.stream, f"{self._subject(store)}.remainder.{event}")
            except self._nats.js.errors.NotFoundError:
                return None
            return SealedLine.of(message.data.decode("utf-8"), _seal_of(message.headers or {}))
        return self._run(go())

    def erase(self, store: str, events: set) -> int:
        """Delete (the server overwrites them) the records of ``store`` that carry ``events``, with
        a replicated stream at one replica so that no node's raft log keeps them
        (``nats_cluster_forget``); returns how many were deleted, ``erase_report`` what became of
        the broker's other copies. Reads headers only, never the records' contents."""
        api = self._nats.js.api

        async def go():
            config = api.ConsumerConfig(headers_only=True, ack_policy=api.AckPolicy.NONE,
                                        deliver_policy=api.DeliverPolicy.ALL, inactive_threshold=30.0)
            subscription = await self._js.pull_subscribe(self._subject(store), stream=self.stream, config=config)
            doomed = []
            try:
                while True:
                    try:
                        batch = await subscription.fetch(1000, timeout=0.5)
                    except (self._nats.errors.TimeoutError, asyncio.TimeoutError):
                        break
                    for message in batch:
                        if (message.headers or {}).get(MSG_ID) in events:
                            doomed.append(message.metadata.sequence.stream)
                    if batch and batch[-1].metadata.num_pending == 0:
                        break
            finally:   # gone at once: a consumer left on a node would hold up the way to one replica
                name = (await subscription.consumer_info()).name
                await subscription.unsubscribe()
                await self._js.delete_consumer(self.stream, name)
            plan = await cluster_forget.prepare(self._nc, self.stream, bool(doomed))
            deleted = 0
            for seq in doomed:
                try:
                    deleted += bool(await self._js.delete_msg(self.stream, seq))
                except self._nats.js.errors.APIError as exc:   # gone already: another run erased it
                    if exc.code != 404 and exc.err_code != SEQUENCE_NOT_FOUND:
                        raise
            try:
                self._erase_report = await cluster_forget.finish(self._nc, plan)
            except cluster_forget.Refused as exc:
                raise LogUnavailable(f"stream {self.stream} stays at one replica after the erase: scaling it back "
                                     f"to {plan.replicas} failed ({exc})",
                                     "the next run of the same `fgraph sync` brings it back, or: nats stream "
                                     f"edit {self.stream} --replicas {plan.replicas} -f") from None
            return deleted
        deleted = self._run(go(), CALL_TIMEOUT * 12 + cluster_forget.SETTLE_WAIT * 2)
        self.last(store)   # the subject may now end earlier: the next append expects what the server holds
        return deleted

    def _caught_up(self, store: str, event: str) -> bool:
        """Whether ``event`` is ``store``'s last record, put there by another run of its publisher (or
        an attempt whose answer was lost); the next append then expects it. JetStream checks the
        expected sequence before the message id, so such a record came back as "moved under this
        publisher". Otherwise the expectation stays: a record of another order is still a Conflict."""
        before = self._seq[store]
        if self.last(store) == event:
            return True
        self._seq[store] = before
        return False

    def erase_report(self) -> dict:
        """What the last ``erase`` did about the broker's other copies (its raft logs), for the report."""
        return self._erase_report

    def pending(self, consumer: str) -> int:
        info = self._run(self._js.consumer_info(self.stream, consumer))
        return info.num_pending + info.num_ack_pending


def open_log(url: str, *, create_stream: bool = False, replicas: int = 1, max_age: float = 0,
             ack_wait: float = DEFAULT_ACK_WAIT, insecure_plaintext_credentials: bool = False) -> NatsLog:
    """The adapter's entry (``fgraph.bridges.sync.adapters``): a connection to the stream ``url`` names."""
    return NatsLog(url, create=create_stream, replicas=replicas, max_age=max_age, ack_wait=ack_wait,
                   insecure_plaintext_credentials=insecure_plaintext_credentials)
