"""Committing a request: idempotency, planning, rows per commit, event and report (spec 03 §8–§12)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Protocol

import apsw

from fgraph.core.hashing import sha256
from fgraph.core import values
from fgraph.core.canonical import dumps
from fgraph.core.catalog import Catalog
from fgraph.core.checks import strict_int
from fgraph.core.errors import Conflict, SchemaError, TooLarge, ValueTypeError
from fgraph.core.genesis import A_AT, A_BY, A_IMPORTED_AT, A_META, A_SOURCE
from fgraph.core.identity import anonymous_eid, gid_to_uuid, read_clock, transaction_time, uuid_to_gid
from fgraph.core.plan import Delta, NewIdent, Planner
from fgraph.core.session import WriteSession
from fgraph.core.replay import Replay
from fgraph.core.rows import Rows
from fgraph.core.schema_cache import WriterHead as WriterHead  # kept importable from here, where it is made
from fgraph.core.txn import write_transaction
from fgraph.core.selectors import Handle
from fgraph.core.types import JSON, JSONObject
from fgraph.core.values import Value
from fgraph.core.limits import GENESIS_TX, INT64_MAX, MAX_EVENT_BYTES

UNSET = object()
FORBIDDEN_TX_KEYS = ("id", "fgraph/at", "fgraph/by", "fgraph/source", "fgraph/meta")


def check_operation_id(operation_id: object) -> None:
    if operation_id is None:
        return
    if not isinstance(operation_id, str):
        raise ValueTypeError(f"operation_id {operation_id!r} is not a string", "use a short text key")
    size = len(operation_id.encode("utf-8", "surrogatepass"))
    if not 1 <= size <= 512 or any(unicodedata.category(ch) in ("Cc", "Cs") for ch in operation_id):
        raise ValueTypeError(f"invalid operation_id {operation_id!r}",
                             "use 1-512 UTF-8 bytes without control characters")


def check_if_basis_tx(if_basis_tx: object) -> None:
    if if_basis_tx is None:
        return
    strict_int(if_basis_tx, "if_basis_tx {value!r} must be a transaction id (an integer >= {low})",
               "pass the basis_tx of your last read", low=GENESIS_TX, high=INT64_MAX)


def noop_report(basis: int) -> JSONObject:
    return {"asserted": [], "at": None, "basis_tx": basis, "event": None, "ids": {}, "retracted": [],
            "status": "noop", "tx": None}


def already_applied_report(cat: Catalog, tx: int) -> JSONObject:
    return {"asserted": [], "at": cat.tx_at(tx), "basis_tx": cat.tx_before(tx), "event": gid_to_uuid(cat.gid_of(tx)),
            "ids": {}, "retracted": [], "status": "already_applied", "tx": tx}


class DerivedFacts(Protocol):
    """Facts a request plans from the database itself before its data (undo's inverse, a schema manifest's changes)."""

    def plan(self, planner: Planner) -> None: ...


class CommitPlanner(Protocol):
    """What ``Commit`` reads of a planner: ``Planner``'s, or ``replay_plan.LeanReplay``'s for a replayed record."""

    tx: NewIdent
    fact_tx: dict[int, int]
    schema_changed: bool

    def nohistory(self, a: Handle) -> bool: ...


class Request:
    """One write: the data plus the options of 03 §1, validated."""

    def __init__(self, data: JSON, *, source: str | None = None, by: str | None = None, meta: JSON = UNSET,
                 tx: dict[str, JSON] | None = None, operation_id: str | None = None, if_basis_tx: int | None = None,
                 hash_envelope: JSON = None, derived: DerivedFacts | None = None) -> None:
        check_operation_id(operation_id)
        check_if_basis_tx(if_basis_tx)
        for label, text in (("by", by), ("source", source)):
            if text is not None and not isinstance(text, str):
                raise ValueTypeError(f"{label} must be text, not {type(text).__name__}", f"pass {label} as a string")
        if tx is not None:
            if not isinstance(tx, dict):
                raise ValueTypeError("the tx option must be a map of attribute to value", 'pass {"audit/tag": "x"}')
            for key in FORBIDDEN_TX_KEYS:
                if key in tx:
                    raise SchemaError(f"the tx option cannot set {key!r}",
                                      "fgraph/at is automatic; pass by, source and meta as options")
        self.data, self.source, self.by, self.meta, self.tx = data, source, by, meta, tx
        self.operation_id, self.if_basis_tx = operation_id, if_basis_tx
        self.hash_envelope = hash_envelope
        self.derived = derived      # facts planned from the database itself (undo's inverse), before data

    def options(self) -> JSONObject:
        out: JSONObject = {}
        if self.by is not None:
            out["by"] = self.by
        if self.meta is not UNSET:
            out["meta"] = self.meta
        if self.source is not None:
            out["source"] = self.source
        if self.tx is not None:
            out["tx"] = self.tx
        return out

    def request_hash(self) -> bytes | None:
        if self.operation_id is None:
            return None
        envelope = self.hash_envelope if self.hash_envelope is not None else \
            {"data": self.data, "options": self.options()}
        return sha256(dumps(envelope).encode("utf-8")).digest()

    def has_metadata(self) -> bool:
        return self.by is not None or self.source is not None or self.meta is not UNSET


def transact(session: WriteSession, request: Request) -> JSONObject:
    """Run one request in its own write transaction and return its report."""
    conn, schema_cache = session.conn, session.schema_cache
    req_hash = request.request_hash()
    with write_transaction(conn, schema_cache, session.identity_cache) as txn:
        schema_cache.validate(conn)
        report = run_in_transaction(session, request, req_hash)
        if report["status"] != "applied":
            txn.discard()
    if report["status"] == "applied":
        schema_cache.head = WriterHead(report["tx"], report["at"], report["tx"] + 1, conn.total_changes())
    return report


def run_in_transaction(session: WriteSession, request: Request, req_hash: bytes | None, *, replay: Replay | None = None,
                       details: bool = True) -> JSONObject:
    """Plan and write inside an open write transaction (shared with apply). Without ``details``
    the report's ``asserted`` and ``retracted`` lists stay empty (a bulk apply only counts)."""
    conn, schema_cache = session.conn, session.schema_cache
    cat = session.catalog()
    head = schema_cache.head
    if head is None or not head.current(conn):
        head = None
    latest = head.latest if head is not None else cat.latest_tx()
    if request.operation_id is not None:
        found = cat.operation(request.operation_id)
        if found is not None:
            if found[1] != req_hash:
                raise Conflict(f"operation_id {request.operation_id!r} was already used for another request",
                               "use a new operation_id for a different request")
            return already_applied_report(cat, found[0])
    if request.if_basis_tx is not None and request.if_basis_tx != latest:
        raise Conflict(f"if_basis_tx {request.if_basis_tx} is stale: the latest transaction is {latest}",
                       "re-read and retry against the new basis")
    lean = replay.plan_lean(cat, schema_cache) if replay is not None and replay.lean else None
    planner: CommitPlanner
    if lean is not None:
        planner, delta = lean
    else:
        planner = Planner(cat, schema_cache=schema_cache, policy=replay.policy if replay is not None else None)
        if replay is not None:
            replay.plan(planner)
        if request.derived is not None:
            request.derived.plan(planner)
        planner.plan_data(request.data)
        if request.tx:
            planner.plan_tx_facts(request.tx)
        delta = planner.finish()
        if replay is not None:
            replay.check(delta)
    if planner.schema_changed:
        schema_cache.clear()
    if not (delta.asserted or delta.retracted or delta.new or request.has_metadata()
            or request.operation_id is not None or replay is not None):
        return noop_report(latest)
    return Commit(conn, cat, planner, delta, latest, head, session.rows()).write(session, request, req_hash, replay=replay,
                                                               details=details)


class Commit:
    """Writes one planned transaction's rows in the order of 03 §9."""

    def __init__(self, conn: apsw.Connection, cat: Catalog, planner: CommitPlanner, delta: Delta, latest: int,
                 head: WriterHead | None = None, rows: Rows | None = None) -> None:
        self.conn, self.cat, self.planner, self.delta, self.latest = conn, cat, planner, delta, latest
        self.head = head
        self.rows = rows if rows is not None else Rows(conn)
        self._portable: dict[int, JSON] = {}
        self._local: dict[int, str | int] = {}
        self._rendered: dict[int, JSON] = {}   # fact id -> wire form, for values without refs (the same in both)

    def resolve(self, handle: Handle) -> int:
        return handle.id if isinstance(handle, NewIdent) else handle  # type: ignore[return-value]  # write() gave it its id

    def local_ref(self, ident: int) -> str | int:
        found = self._local.get(ident)
        if found is None:
            new = self.new_by_id.get(ident)
            name = self.cat.name_of(ident) if new is None else (new.key if new.kind == "name" else None)
            found = self._local[ident] = name if name is not None else ident
        return found

    def portable_ref(self, ident: int) -> JSON:
        # One commit names the same few identities many times (every fact's attribute).
        found = self._portable.get(ident)
        if found is None:
            if ident in self.new_by_id:
                new = self.new_by_id[ident]
                found = new.key if new.kind == "name" else {"eid": gid_to_uuid(new.gid)}
            else:
                name = self.cat.name_of(ident)
                found = name if name is not None else {"eid": gid_to_uuid(self.cat.gid_of(ident))}
            self._portable[ident] = found
        return found

    def write(self, session: WriteSession, request: Request, req_hash: bytes | None, *, replay: Replay | None,
              details: bool = True) -> JSONObject:
        planner, delta = self.planner, self.delta
        first = self.head.next_id if self.head is not None else self.cat.next_id()
        for offset, ident in enumerate(delta.new):
            ident.id = first + offset
        tx = planner.tx
        tx.id = first + len(delta.new)
        if tx.id > INT64_MAX:
            raise TooLarge("the identity allocator is exhausted", "no more ids can be allocated in this file")
        event = replay.event if replay is not None else session.event_factory(tx.id)
        tx.gid = uuid_to_gid(event)
        for ident in delta.new:
            if ident.kind != "name" and ident.gid is None:
                ident.gid = anonymous_eid(event, ident.id - first)  # type: ignore[operator]  # given above
        self.new_by_id = {ident.id: ident for ident in delta.new}
        self.new_by_id[tx.id] = tx
        last_at = self.head.at if self.head is not None else self.cat.tx_at(self.latest)
        at = transaction_time(read_clock(session.clock), last_at)

        asserted_rows = [self.insert_fact(tx.id, A_AT, Value(values.TAG_INSTANT, at, None), tx.id)]
        # text and a json wrapper are Values, never refs: the type: ignores below say so
        if request.by is not None:
            asserted_rows.append(self.insert_fact(tx.id, A_BY, values.from_wire(request.by), tx.id))  # type: ignore[arg-type]
        if request.source is not None:
            asserted_rows.append(self.insert_fact(tx.id, A_SOURCE, values.from_wire(request.source), tx.id))  # type: ignore[arg-type]
        if request.meta is not UNSET:
            asserted_rows.append(self.insert_fact(tx.id, A_META, values.from_wire({"json": request.meta}), tx.id))  # type: ignore[arg-type]
        event_asserted, tx_facts = [], []
        for e, a, value in delta.asserted:
            e_id, a_id = self.resolve(e), self.resolve(a)
            if value.t == 0:
                value = Value(0, self.resolve(value.v), None)
            asserted_rows.append(self.insert_fact(e_id, a_id, value, tx.id))
            if replay is not None:
                continue      # an applied event keeps its source's payload: nothing to render
            tag = values.logical_name(value.t)
            rendered = self.render(value, self.portable_ref)
            if value.t != values.TAG_REF:      # a plain value renders the same in the receipt
                self._rendered[asserted_rows[-1][0]] = rendered
            if e is tx:
                tx_facts.append([self.portable_ref(a_id), rendered, tag])
            else:
                event_asserted.append([self.portable_ref(e_id), self.portable_ref(a_id), rendered, tag])
        if replay is not None:
            asserted_rows.append(self.insert_fact(tx.id, A_IMPORTED_AT, Value(values.TAG_INSTANT, replay.imported_at, None),
                                                  tx.id))
        retracted_rows, event_retracted = [], []
        for e, a, value, fact_id in delta.retracted:
            value = Value(value.t, value.v, self.cat.blob(value.v) if value.t in values.INDIRECT_TAGS else None)
            if replay is None:
                event_retracted.append([self.portable_ref(e), self.portable_ref(a),
                                        self.render(value, self.portable_ref), values.logical_name(value.t)])
            fact_tx = self.planner.fact_tx.get(fact_id) or self.cat.fact_tx(fact_id)
            retracted_rows.append((fact_id, e, a, value, fact_tx))
        self.retract_rows(retracted_rows, tx.id)
        try:
            self.rows.identities(  # every new identity has its id by now
                [(i.id, i.key if i.kind == "name" else None, None if i.kind == "name" else i.gid, tx.id)  # type: ignore[misc]
                 for i in delta.new + [tx]])
        except apsw.ConstraintError:
            # The gid column is UNIQUE: an event UUID (or an eid derived from it) is taken.
            raise Conflict(f"event UUID {event} or an eid derived from it is already used by another identity",
                           "retry; every transaction needs a fresh event UUID") from None
        if replay is not None:
            document = replay.record
        else:
            document = {"asserted": event_asserted, "at": at,
                        "created": [self.portable_ref(i.id) for i in delta.new],  # type: ignore[arg-type]  # as above
                        "event": event, "fgraph": "event/1", "retracted": event_retracted}
            if request.by is not None:
                document["by"] = request.by
            if request.meta is not UNSET:
                document["meta"] = request.meta
            if request.source is not None:
                document["source"] = request.source
            if tx_facts:
                document["tx_facts"] = tx_facts
        text = replay.text if replay is not None and replay.text is not None else dumps(document)
        encoded = text.encode("utf-8")
        if len(encoded) > MAX_EVENT_BYTES:
            raise TooLarge(f"the transaction's event is {len(encoded)} bytes, over the {MAX_EVENT_BYTES}-byte cap",
                           "split the write into smaller transactions")
        self.rows.event(tx.id, text, sha256(encoded).digest(), request.operation_id, req_hash)
        self.rows.next_id(tx.id + 1)
        ids = {i.key: i.id for i in delta.new if i.kind == "name" and "/" not in i.key}  # type: ignore[operator]  # a name has its key
        ids.update({i.key: i.id for i in delta.new if i.kind == "tmp"})
        return {
            "asserted": [self.rendered_fact(fid, e, a, v, tx.id, None) for fid, e, a, v in asserted_rows]
            if details else [],
            "at": at, "basis_tx": self.latest, "event": event, "ids": ids,
            "retracted": [self.rendered_fact(fid, e, a, v, ftx, tx.id) for fid, e, a, v, ftx in retracted_rows]
            if details else [],
            "status": "applied", "tx": tx.id,
        }

    @staticmethod
    def render(value: Value, ref: Callable[[int], JSON]) -> JSON:
        return values.render(value.t, value.v, value.blob, ref)

    def insert_fact(self, e: int, a: int, value: Value, tx: int) -> tuple[int, int, int, Value]:
        return self.rows.fact(e, a, value.v, value.t, value.blob, tx), e, a, value

    def retract_rows(self, rows: list[tuple[int, int, int, Value, int]], tx: int) -> None:
        nohistory: dict[int, bool] = {}
        freed = set()
        for fact_id, _e, a, value, _ in rows:
            if a not in nohistory:
                nohistory[a] = self.planner.nohistory(a)
            freed.add(self.rows.retract(fact_id, value.v, value.t, tx, delete=nohistory[a]))
        freed.discard(None)
        self.rows.free_blobs(freed)

    def rendered_fact(self, fact_id: int, e: int, a: int, value: Value, tx: int, rx: int | None) -> JSONObject:
        rendered = self._rendered.get(fact_id) if rx is None else None
        return {"a": self.local_ref(a),
                "e": self.local_ref(e), "id": fact_id, "rx": rx, "tx": tx,
                "v": rendered if rendered is not None else self.render(value, self.local_ref)}
