"""The library façade: ``connect()`` and ``Db``, the surface of spec 11 §3.

Each method opens no SQL of its own: it delegates to the module that owns the
concern (transact, reads, …). A ``Db`` pinned with ``at()`` is a read-only view.

Size: one method per library call of spec 11 §3 and of our additions, each a few lines of
delegation; splitting the façade would split the one surface users read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from fgraph.core import connection, reads, replica_follow, settings, timespec, transact as _transact, txn as _txn
from fgraph.core.canonical import loads
from fgraph.core.checks import strict_int
from fgraph.core.session import WriteSession
from fgraph.core.errors import ReadOnly, Unsupported
from fgraph.core.identity import event_factory_from_env, make_clock, read_clock
from fgraph.core.values import format_instant
from fgraph.core.declare import declaration, shape_request
from fgraph.core.transact import UNSET, Request
from fgraph.core.limits import (CONTEXT_BUDGET, CONTEXT_LIMIT, DATOMS_LIMIT, DEFAULT_QUERY_BUDGET, GENESIS_TX, SEARCH_EXPAND,
                                SEARCH_K)
from fgraph.core.mappings import TxReport

if TYPE_CHECKING:
    from fgraph.core.identity import Clock, EventFactory
    from fgraph.core.types import JSON, Connection, JSONObject, PathArg, PhaseCallback, StreamArg, TextWriter, TimeArg
    from fgraph.ops.doctor import Diagnosis
    from fgraph.ops.propagate import StandIns
    from fgraph.query.datalog.results import Result
    from fgraph.query.search.run import SearchResult

# The wings above core (streams, ops, query) are imported by the methods that use them, so that
# opening a store to read one entity does not load the doctor, the query engine and the stream
# writers (benchmarks/startup.py: ``fgraph info`` and ``fgraph get``).


def connect(path: PathArg = settings.LEGACY_DB_PATH, *, clock: Clock | int | None = None, read_only: bool = False,
            query_budget: int = DEFAULT_QUERY_BUDGET, event_factory: EventFactory | None = None) -> "Db":
    """Open (and, when writable and new, create) a database; the default path is the published
    library's (the CLI's differs, docs/settings.md)."""
    strict_int(query_budget, "query_budget={value!r} is invalid", "pass a positive integer work budget", low=1)
    clock_fn, events = make_clock(clock), event_factory or event_factory_from_env()
    if read_only and replica_follow.is_replica(path):  # each read through a follower (docs/replication.md)
        return replica_follow.following(str(path), Db, clock=clock_fn, event_factory=events, query_budget=query_budget)
    conn = connection.open_connection(path, read_only, genesis_clock=clock_fn)
    return Db(conn, str(path), clock=clock_fn, read_only=read_only, event_factory=events, query_budget=query_budget)


class Db:
    """One open database (or a historical view of one): the library façade of spec 11 §3."""

    def __init__(self, conn: Connection, path: str, *, clock: Clock, read_only: bool, event_factory: EventFactory,
                 basis: int | None = None, query_budget: int = DEFAULT_QUERY_BUDGET) -> None:
        self.connection = conn
        self.query_budget = query_budget
        self.path = path
        self.read_only = read_only or basis is not None
        self.basis = basis
        self._owns_connection = basis is None
        self._session = WriteSession(conn, clock, event_factory)

    # -- lifecycle --------------------------------------------------------------
    def close(self) -> None:
        """Close the connection; the Db cannot be used afterwards."""
        conn, self.connection = self.connection, None  # type: ignore[assignment]  # a closed Db has none
        if self._owns_connection and conn is not None:
            connection.close_connection(conn)

    def __enter__(self) -> "Db":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _writable(self) -> None:
        if self.basis is not None:
            raise ReadOnly(f"this is a historical view at transaction {self.basis}",
                           "write through the database itself, not through at()")
        if self.read_only:
            raise ReadOnly("the database was opened read-only", "open it writable to change it")

    def _reader(self) -> reads.Reader:
        return reads.Reader(self.connection, self.basis, self.path)

    # -- writes -----------------------------------------------------------------
    def transact(self, data: JSON, *, source: str | None = None, by: str | None = None, meta: JSON = UNSET,
                 tx: dict[str, JSON] | None = None, operation_id: str | None = None,
                 if_basis_tx: int | None = None) -> TxReport:
        """Commit one request (spec 03): a map, an operation or a list of them, with its options; returns the report."""
        self._writable()
        request = Request(data, source=source, by=by, meta=meta, tx=tx, operation_id=operation_id,
                          if_basis_tx=if_basis_tx)
        return self._run(request)

    def _run(self, request: Request) -> TxReport:
        return TxReport(_transact.transact(self._session, request))

    def undo(self, transaction: TimeArg, *, by: str | None = None, source: str | None = None, meta: JSON = UNSET,
             operation_id: str | None = None, if_basis_tx: int | None = None) -> TxReport:
        """Write the audited inverse of ``transaction`` (spec 07 §3)."""
        from fgraph.ops import undo as _undo
        self._writable()
        request = _undo.undo_request(transaction, by=by, source=source, meta=meta, operation_id=operation_id,
                                     if_basis_tx=if_basis_tx)
        return self._run(request)

    add = transact

    def retract(self, ref: JSON, attr: str | None = None, value: JSON = None, *, by: str | None = None,
                source: str | None = None, meta: JSON = UNSET, operation_id: str | None = None,
                if_basis_tx: int | None = None) -> TxReport:
        """Retract one value, every value of ``attr`` (``value`` None, as in fgraph 1.x), or the entity."""
        op = ["retract", ref]
        if attr is not None:
            op.append(attr)
            if value is not None:
                op.append(value)
        return self.transact(op, by=by, source=source, meta=meta, operation_id=operation_id, if_basis_tx=if_basis_tx)

    def declare(self, attr: str, *, type: str | None = None, ref: bool = False, many: bool | None = None,
                unique: bool | None = None, nohistory: bool | None = None, dims: int | None = None,
                doc: str | None = None, vector_model: str | None = None, by: str | None = None,
                source: str | None = None, meta: JSON = UNSET, operation_id: str | None = None,
                if_basis_tx: int | None = None) -> TxReport:
        """Declare an attribute's schema: exactly ``transact`` of the map ``declaration()`` builds (spec 03 §4)."""
        self._writable()
        return self.transact(declaration(attr, type=type, ref=ref, many=many, unique=unique,
                                         nohistory=nohistory, dims=dims, doc=doc, vector_model=vector_model),
                             by=by, source=source, meta=meta, operation_id=operation_id, if_basis_tx=if_basis_tx)

    def declare_shape(self, name: str, *, required: Sequence[str] = (), allowed: Sequence[str] = (),
                      closed: bool = False, operation_id: str | None = None, if_basis_tx: int | None = None) -> TxReport:
        """Create or replace a shape: exactly ``transact`` of the request ``shape_request`` builds (spec 13 §13.1)."""
        self._writable()
        return self.transact(shape_request(name, required=required, allowed=allowed, closed=closed),
                             operation_id=operation_id, if_basis_tx=if_basis_tx)

    def apply_schema_manifest(self, manifest: JSON, *, operation_id: str | None = None,
                              if_basis_tx: int | None = None) -> TxReport:
        """Make the declared schema equal ``manifest`` in one transaction (spec 13 §14.4)."""
        from fgraph.query import manifest as _manifest
        self._writable()
        plan, envelope = _manifest.apply_request(manifest, self.path)
        return self._run(Request([], operation_id=operation_id, if_basis_tx=if_basis_tx, hash_envelope=envelope,
                                 derived=plan))

    def speculate(self) -> contextlib.AbstractContextManager[Db]:
        """``with db.speculate():`` — writes inside report as if committed and are all rolled back at
        the block's end, also on an exception (spec 13 §15). Yields this same handle."""
        if self.basis is not None or self.read_only:
            self._writable()
        if _txn.is_speculating(self.connection):
            raise Unsupported("speculate() inside a speculation", "finish the outer speculation first")
        return self._speculation()

    @contextlib.contextmanager
    def _speculation(self) -> Iterator[Db]:
        with _txn.speculation(self.connection, self._session.schema_cache, self._session.identity_cache):
            yield self

    def excise(self, ref: JSON, *, operation_id: str | None = None, if_basis_tx: int | None = None,
               erase_name: bool = False) -> TxReport:
        """Erase from present and history (07 §2), the name too with ``erase_name``; the published receipt (F5, F6)."""
        from fgraph.ops import excise as _excise
        self._writable()
        try:
            return TxReport(_excise.excise(self._session, self.path, ref, operation_id=operation_id,
                                           if_basis_tx=if_basis_tx, erase_name=erase_name))
        finally:
            self._session.forget_cached_state()

    def excision_record(self, event: str) -> JSONObject:
        """The ``excision/1`` record of this store's excision event ``event`` (docs/forgetting.md F1)."""
        from fgraph.ops import propagate
        return propagate.describe(self.connection, event)

    def redacted_remainder(self, event: str) -> str | None:
        """What survives here of the redacted event ``event``, as an event/1 line (None: nothing)."""
        from fgraph.ops import propagate
        return propagate.remainder_line(self.connection, event)

    def holds_event(self, event: str) -> bool:
        """Does this store hold event ``event``, whole or redacted?"""
        from fgraph.ops import propagate
        return propagate.holds(self.connection, event)

    def stand_ins(self) -> StandIns:
        """What this store holds in place of events it must not take again (``propagate.StandIns``)."""
        from fgraph.ops import propagate
        return propagate.StandIns(self.connection)

    def carry_out_excision(self, record: JSONObject, source: str,
                           allow: Callable[[JSON, str, int, bool], None] | None = None) -> JSONObject:
        """Perform another store's excision (its ``excision/1`` record) on this store, once;
        ``allow`` may refuse it, told who introduced the target here (``propagate.carry_out``)."""
        from fgraph.ops import propagate
        self._writable()
        try:
            return propagate.carry_out(self._session, self.path, propagate.check_record(record), source, allow)
        finally:
            self._session.forget_cached_state()

    # -- event streams ----------------------------------------------------------
    def iter_events(self, since: int = GENESIS_TX, through: int | None = None) -> Iterator[str]:
        """Canonical event lines (without LF), streamed in tx order; ``since`` is a local tx id
        (exclusive, need not be a transaction; for a time use ``resolve_time`` first)."""
        for _, line in self.iter_tx_events(since, through):
            yield line

    def iter_tx_events(self, since: int = GENESIS_TX, through: int | None = None) -> Iterator[tuple[int, str]]:
        """``(tx, line)`` pairs: each canonical event line (without LF) with its local transaction
        id, in tx order, bounded like ``iter_events``; for a caller that keeps its place by tx."""
        from fgraph.streams import events as _events
        yield from _events.iter_event_lines(self.connection, since, self._through(through))

    def event_records(self, since: int = GENESIS_TX, through: int | None = None) -> list[JSONObject]:
        """The event/1 records after ``since`` (exclusive) up to ``through`` (inclusive), as a list."""
        return [loads(line) for line in self.iter_events(since, through)]

    def _through(self, through: int | None) -> int | None:
        if self.basis is None:
            return through
        return self.basis if through is None else min(through, self.basis)

    def follow_lines(self, since: TimeArg | None = None, *, stop: Callable[[], bool] | None = None,
                     interval: float = 0.05) -> Iterator[str]:
        """Event lines after ``since`` (resolved like at()), then every later commit, forever.

        ``interval`` bounds the wait between two polls; the follower backs off from 5 ms to
        ``min(interval, 50 ms)`` while nothing commits.
        """
        from fgraph.streams import events as _events
        if self.basis is not None:
            raise Unsupported("cannot follow a historical view", "follow the database itself")
        since_tx = GENESIS_TX if since is None else self.resolve_time(since, since=True)
        for _, line in _events.follow_lines(self.connection, since_tx, stop=stop, longest=interval):
            yield line

    def follow(self, since: TimeArg | None = None, *, interval: float = 0.5) -> Iterator[JSONObject]:
        """Event records after ``since``, then every later commit, forever (spec 04 §4).

        The published signature's ``interval`` (0.5 s) bounds the wait between polls; this
        runtime polls faster, backing off from 5 ms to at most 50 ms.
        """
        for line in self.follow_lines(since, interval=interval):
            yield loads(line)

    def apply_summary(self, source: StreamArg, *, dry_run: bool = False,
                      on_report: Callable[[JSONObject], None] | None = None, optimistic: bool = False,
                      skip: Callable[[JSONObject], bool] | None = None) -> JSONObject:
        """Apply an event/1 stream in one transaction; returns the summary counts (spec 04 §5).
        ``optimistic`` dry runs raise ``fgraph.streams.apply.ConflictAhead`` at a conflict; records
        for which ``skip(record)`` is true are passed over (sync's stand-ins)."""
        from fgraph.streams import apply as _apply
        self._writable()
        return _apply.apply_stream(self._session, source, on_report=on_report, dry_run=dry_run,
                                   optimistic=optimistic, skip=skip)

    def apply(self, source: StreamArg) -> list[TxReport]:
        """Apply an event/1 stream; returns the report of every event, in order."""
        reports: list[TxReport] = []
        self.apply_summary(source, on_report=lambda report: reports.append(TxReport(report)))
        return reports

    # -- snapshots --------------------------------------------------------------
    def iter_snapshot(self) -> Iterator[str]:
        """snapshot/1 lines (without LF) at this view's basis, in one read transaction."""
        from fgraph.streams import snapshot as _snapshot
        return _snapshot.iter_snapshot(self.connection, self.basis)

    def snapshot(self, writer: TextWriter | None = None) -> str | None:
        """The snapshot/1 text of this view (spec 05 §1)."""
        if writer is None:
            return "".join(line + "\n" for line in self.iter_snapshot())
        for line in self.iter_snapshot():
            writer.write(line + "\n")
        return None

    def restore(self, source: StreamArg, *, details: bool = False) -> JSONObject | None:
        """Restore a snapshot/1 stream into this pristine database (spec 05 §2). Returns None, as the
        published library does; with ``details=True`` ``{"basis_tx", "ok"}`` (what ``fgraph restore`` prints)."""
        from fgraph.ops import doctor as _doctor
        from fgraph.ops.doctor import restored as _restored
        from fgraph.streams.restore import run as _restore
        self._writable()
        try:
            result = _restore.restore(self.connection, source, final_check=_doctor.diagnose,
                                      reduced_check=_restored)
            return result if details else None
        finally:
            self._session.forget_cached_state()

    # -- reads ------------------------------------------------------------------
    def info(self, digest: bool = False, content_digest: bool = False) -> JSONObject:
        """``stats()`` plus the latest transaction and its time (what ``--if-basis-tx`` needs); with ``digest``
        also ``basis_tx`` and the logical digest, with ``content_digest`` the content digest, at one basis."""
        view = self.at(self.latest_tx()) if self.basis is None else self
        latest = view.latest_tx()
        out = dict(view.stats(), latest_tx=latest, latest_at=format_instant(view.receipt(latest)["at"]))
        if digest or content_digest:
            from fgraph.streams.content_digest import digests_at
            out.update(digests_at(view.connection, latest, logical=digest, content=content_digest))
        if view is not self:
            view.close()
        return out

    def stats(self) -> JSONObject:
        """The counts of ``fgraph info`` (spec 09)."""
        return self._reader().stats()

    def entity(self, ref: JSON, depth: int = 1) -> JSONObject:
        """An entity's live attributes, nested refs to ``depth`` (spec 09)."""
        return self._reader().entity(ref, depth)

    # -- questions (spec 12) ------------------------------------------------------
    def q(self, query: JSON = None, args: Sequence[JSON] | None = None, **clauses: JSON) -> Result:
        """Datalog: one query object, or its clauses as keywords (``in`` via ``**{"in": [...]}``)."""
        from fgraph.query.datalog import ask as _ask
        reader = self._reader()
        return _ask.ask(self.connection, reader.basis, query, args, budget=self.query_budget, **clauses)

    def explain(self, query: JSON, args: Sequence[JSON] | None = None) -> JSONObject:
        """The plan ``q`` would follow: clause order, access paths, warnings; reads no facts."""
        from fgraph.query.datalog import ask as _ask
        return _ask.explain(self.connection, self._reader().basis, query, args, budget=self.query_budget)

    def datoms(self, index: str = "eavt", components: Sequence[JSON] = (), *, source: str = "current",
               limit: int = DATOMS_LIMIT, cursor: str | None = None) -> JSONObject:
        """One page of an index (eavt, avet, vaet) at this view's basis; pass ``next_cursor`` for the next."""
        from fgraph.query import datoms as _datoms
        return _datoms.datoms(self._reader(), index, components, source=source, limit=limit, cursor=cursor)

    def search(self, text: str | None = None, vector: Sequence[float] | None = None, k: int = SEARCH_K,
               expand: int = SEARCH_EXPAND, filters: JSON = (), vector_attribute: str | None = None,
               text_attributes: Sequence[str] = (), **options: JSON) -> SearchResult:
        """Keyword, vector or hybrid search over the current facts, with ``expand`` levels of
        neighbours (spec 13 §2–§9). Raises Unsupported on a historical view."""
        from fgraph.query.search import run as _search
        options.update(text=text, vector=vector, k=k, expand=expand, filters=filters,
                       vector_attribute=vector_attribute, text_attributes=text_attributes)
        return _search.search(self.connection, self._reader, historical=self.basis is not None, budget=self.query_budget,
                              options=options)

    def context(self, since: TimeArg | None = None, budget: int = CONTEXT_BUDGET, *, limit: int = CONTEXT_LIMIT,
                entity: JSON = None, format: str = "markdown", by: str = "change", type: str | None = None,
                more_hint: str = "cli") -> JSONObject:
        """The most recent changes after ``since`` (a transaction or time, ``24h`` included) for a
        prompt: newest first, grouped per transaction with who, where and when, at most ``limit``
        items and ``budget`` characters, ending with how to get what was left out. ``by="entity"``:
        one item per changed entity instead, newest source time first (``type`` keeps one type);
        ``more_hint`` words that ending for the CLI, an MCP ``tool`` or an MCP ``resource``."""
        from fgraph.query.context import changes as _context
        low = None if since is None else self.resolve_time(since, since=True)
        return _context.context(self._reader(), low, budget, limit=limit, entity=entity, format=format, by=by,
                                type=type, more_hint=more_hint, window=_context.window(since, self.now))

    def schema(self, prefix: str | None = None, *, include_system: bool = False) -> JSONObject:
        """The schema page at this view's basis: attributes, shapes and their digest (spec 13 §11)."""
        from fgraph.query import schema as _schema
        return _schema.SchemaReader(self._reader()).page(prefix, include_system)

    def attributes(self, prefix: str | None = None, *, include_system: bool = False) -> list[JSONObject]:
        """Each listed attribute's effective flags, observed types and live fact count (spec 13 §12)."""
        from fgraph.query import schema as _schema
        return _schema.SchemaReader(self._reader()).attributes(prefix, include_system)

    def schema_manifest(self) -> JSONObject:
        """The declared schema as a ``schema/1`` manifest with its digest (spec 13 §14.1)."""
        from fgraph.query import manifest as _manifest
        return _manifest.export(self._reader())

    def check_schema_manifest(self, manifest: JSON) -> JSONObject:
        """What applying ``manifest`` would change, without writing (spec 13 §14.3)."""
        from fgraph.query import manifest as _manifest
        return _manifest.check(self._reader(), manifest)

    def validate(self, ref: JSON) -> JSONObject:
        """One entity checked against its shape at this view's basis (spec 13 §13.3)."""
        from fgraph.query import schema as _schema
        return _schema.SchemaReader(self._reader()).validate(ref)

    def pull(self, ref: JSON, pattern: JSON) -> JSONObject:
        """One entity's attributes selected by a pull pattern (spec 12 §7)."""
        from fgraph.query.datalog import pull as _pull
        return _pull.pull_entity(self._reader(), ref, pattern)

    def incoming(self, ref: JSON, *, limit: int | None = None) -> JSONObject:
        """What refers to an entity now (ours): ``{"basis_tx", "items", "truncated"}``, each item
        ``{"entity", "attribute", "name"}``, by attribute then entity; at most ``limit`` items."""
        from fgraph.query import incoming as _incoming
        return _incoming.incoming(self._reader(), ref, limit=limit)

    def about(self, ref: JSON, depth: int = 1, *, limit: int | None = None) -> JSONObject:
        """``entity()`` and ``incoming()`` at one basis: ``{"entity", "incoming", "incoming_truncated"}``."""
        from fgraph.query import incoming as _incoming
        return _incoming.about(self._reader(), ref, depth, limit=limit)

    def history(self, ref: JSON, attr: str | None = None, *, details: bool = False) -> list[JSONObject]:
        """Every fact ever asserted for an entity (or one attribute of it), with its transactions;
        ``details`` (ours) adds ``at_time``/``rx_at_time`` (RFC 3339) and ``meta``/``rx_meta``."""
        return self._reader().history(ref, attr, details=details)

    def why(self, ref: JSON, attr: str | None = None) -> list[JSONObject]:
        """An entity's live facts with the transactions that asserted them."""
        return self._reader().why(ref, attr)

    def diff(self, t1: TimeArg, t2: TimeArg) -> JSONObject:
        """The facts asserted and retracted after ``t1`` (the exclusive lower bound, like ``since``)
        through ``t2`` (inclusive); the parameter names are spec 11's."""
        return self._reader().diff(self._instant_of(t1), self._instant_of(t2))

    def changes(self, since: TimeArg, until: TimeArg | None = None) -> JSONObject:
        """The facts asserted and retracted after ``since`` through ``until`` (default: this view's basis)."""
        reader = self._reader()
        return reader.diff(self.resolve_time(since, since=True), reader.basis if until is None else self._instant_of(until))

    def receipt(self, transaction: int) -> JSONObject:
        """The receipt of one transaction (spec 03 §13)."""
        return self._reader().receipt(transaction)

    def at(self, value: TimeArg) -> "Db":
        """A read-only view of the database as of a transaction id or time (spec 09)."""
        basis = self.resolve_time(value)
        if self.basis is not None:
            basis = min(basis, self.basis)  # a view never sees past its own basis
        return Db(self.connection, self.path, clock=self._session.clock, read_only=True,
                  event_factory=self._session.event_factory, basis=basis, query_budget=self.query_budget)

    def resolve_time(self, value: TimeArg, *, since: bool = False) -> int:
        """The transaction a ``since`` or ``at`` value names (core/timepoints; docs/cli.md "Times"): a
        transaction id, an event UUID, an RFC 3339 time or a duration before now by this database's
        clock, the beginning (64) when before the first; ``since`` reads another integer as a position."""
        now = read_clock(self._session.clock) if timespec.duration_us(value) is not None else None
        return self._reader().resolve_time(value, absolute=True, since=since, now=now)

    def _instant_of(self, value: TimeArg) -> TimeArg:
        """A duration becomes its transaction here; anything else the reader resolves as before."""
        return self.resolve_time(value) if timespec.duration_us(value) is not None else value

    def resolve(self, ref: JSON, *, loose: bool = False) -> int:
        """The id of a selector (name, id, lookup, ``{"eid": …}``) at this view's basis; NotFound,
        suggesting the nearest names, if unknown. ``loose``: a name may differ in case."""
        return self._reader().resolve(ref, loose=loose)

    def now(self) -> int:
        """This database's clock reading in µs (``FGRAPH_CLOCK`` or the ``clock`` of connect())."""
        return read_clock(self._session.clock)

    def latest_tx(self) -> int:
        """The latest committed transaction; for a view from ``at()``, its basis."""
        return self._reader().basis

    # -- maintenance (spec 06) ----------------------------------------------------
    def doctor(self, repair: bool = False, *, expect_digest: str | None = None) -> JSONObject:
        """The 13-key doctor report; ``repair`` rebuilds FTS and drops orphaned blobs (writable only)."""
        return self.diagnose(repair, expect_digest=expect_digest).report

    def diagnose(self, repair: bool = False, *, expect_digest: str | None = None, digests: bool = False) -> Diagnosis:
        """``doctor`` with its problems as records (kind, message, repairable) and a ``describe()`` for people."""
        from fgraph.ops import doctor as _doctor
        if repair:
            self._writable()
        try:
            return _doctor.examine(self.connection, self.path, repair, expect_digest=expect_digest, digests=digests)
        finally:
            if repair:
                self._session.forget_cached_state()

    def backup(self, path: PathArg, *, details: bool = False, on_phase: PhaseCallback | None = None) -> JSONObject | None:
        """A verified physical copy at the new ``path``. Returns None, as the published library does;
        with ``details=True`` the proof ``{"basis_tx", "digest", "path"}`` (what ``fgraph backup`` prints).
        ``on_phase(name, size_bytes)`` is told as each phase begins (copying, verifying, digest, syncing)."""
        from fgraph.ops import backup as _backup
        proof = _backup.backup(self.connection, self.path, path, on_phase)
        return proof if details else None

    def logical_digest(self) -> str:
        """The snapshot/1 footer sha256 at this view's basis (``fgraph snapshot | tail -1``)."""
        from fgraph.streams import snapshot as _snapshot
        return _snapshot.logical_digest(self.connection, self.basis)


def restore_backup(snapshot: PathArg, path: PathArg, *, clock: Clock | int | None = None,
                   event_factory: EventFactory | None = None, on_phase: PhaseCallback | None = None) -> Db:
    """Install the physical backup file ``snapshot`` at ``path`` (new or empty), verified; return it open.

    The first parameter's name is fgraph 1.x's (spec 11 §3), kept so keyword calls work on both;
    ``on_phase`` is ``backup``'s.
    """
    from fgraph.ops import backup as _backup
    _backup.restore_backup(snapshot, path, on_phase)
    return connect(path, clock=clock, event_factory=event_factory)
