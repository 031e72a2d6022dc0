"""Reads at a basis: entity, history, why, diff, receipt and stats (spec 09 §5–§6, 03 §13)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from fgraph.core.asof import visible_at
from fgraph.core import name_lookup, timepoints, values
from fgraph.core.catalog import Catalog
from fgraph.core.checks import strict_int
from fgraph.core.errors import NotFound, QueryError, SchemaError, ValueTypeError
from fgraph.core.genesis import A_AT, A_BY, A_IMPORTED_AT, A_MANY, A_META, A_SOURCE, A_UNIQUE
from fgraph.core.identity import gid_to_uuid
from fgraph.core.limits import GENESIS_TX, INT64_MAX, INT64_MIN
from fgraph.core.names import described, too_long
from fgraph.core.stats import stats_at
from fgraph.core.values import RefWire

if TYPE_CHECKING:
    import apsw

    from fgraph.core.types import JSON, JSONObject, SQLValue

    # A fact row as the reads select it: (id, e, a, v, t, tx, rx).
    FactRow = tuple[int, int, int, Any, int, int, int | None]



class Reader:
    """Read APIs over one connection; ``basis`` pins a historical view (None = latest)."""

    def __init__(self, conn: apsw.Connection, basis: int | None, path: str) -> None:
        self.conn, self.path = conn, path
        self.cat = Catalog(conn, basis)
        self.basis = basis if basis is not None else self.cat.latest_tx()

    # -- helpers ----------------------------------------------------------------
    def visible(self, alias: str = "") -> str:
        return visible_at(self.basis, alias=alias)

    def local_ref(self, ident: int) -> str | int:
        name = self.cat.name_of(ident)
        return name if name is not None else ident

    def value(self, v: Any, t: int) -> JSON:
        blob = self.cat.blob(v) if t in values.INDIRECT_TAGS else None
        return values.render(t, v, blob, self.local_ref)

    def fact(self, fact_id: int, e: int, a: int, v: Any, t: int, tx: int, rx: int | None) -> JSONObject:
        # key order is the published server's (MCP text content shows it): id, e, a, v, tx, rx
        return {"id": fact_id, "e": self.local_ref(e), "a": self.cat.name_of(a), "v": self.value(v, t), "tx": tx,
                "rx": rx if rx is not None and rx <= self.basis else None}

    def resolve(self, ref: JSON, *, loose: bool = False) -> int:
        """A read-side selector: never allocates; unknown ⇒ NotFound, suggesting the nearest
        names. ``loose``: a name that matches no entity exactly may match one but for case."""
        if isinstance(ref, bool):
            raise ValueTypeError(f"selector {ref!r} is not valid", "use a name, an id, a lookup or an eid")
        if isinstance(ref, int):
            if not INT64_MIN <= ref <= INT64_MAX:
                raise ValueTypeError(f"id {ref} is outside the signed 64-bit range", "use an existing id")
            if ref > 0 and self.cat.identity(ref) is not None:
                return ref
        elif isinstance(ref, str):
            if too_long(ref):   # no store holds it: say so, without building a lookup of it
                raise NotFound(f"entity {described(ref)} was not found",
                               "check the name or id (reads never create entities)")
            found = self.cat.id_by_name(ref)
            if found is None and loose:
                found = name_lookup.case_insensitive(self.conn, ref, self.basis)
            if found is not None:
                return found
            if self.cat.basis is not None and Catalog(self.conn, None, self.cat.cache).id_by_name(ref) is not None:
                raise NotFound(f"entity {ref!r} was not found as of transaction {self.basis}",
                               "it was created later: read at a later time, or without --at/at")
            raise NotFound(f"entity {ref!r} was not found",
                           name_lookup.advice(self.conn, ref, self.basis,
                                              "check the name or id (reads never create entities)"))
        elif isinstance(ref, list) and len(ref) == 2 and isinstance(ref[0], str):
            return self.lookup(ref[0], ref[1])
        elif isinstance(ref, dict) and set(ref) == {"eid"}:
            from fgraph.core.identity import check_event_uuid, uuid_to_gid
            found = self.cat.id_by_gid(uuid_to_gid(check_event_uuid(ref["eid"], "eid")))
            if found is not None:
                return found
        else:
            raise ValueTypeError(f"selector {ref!r} is not valid", "use a name, an id, a lookup or an eid")
        raise NotFound(f"entity {ref!r} was not found", "check the name or id (reads never create entities)")

    def lookup(self, attr: str, raw: JSON) -> int:
        a = self.cat.id_by_name(attr)
        if a is None:
            raise NotFound(f"attribute {described(attr)} was not found", "check the attribute name")
        if self.one_value(a, A_UNIQUE) != 1:
            raise SchemaError(f"attribute {attr!r} is not unique", "look up by a unique attribute")
        wire = values.from_wire(raw)
        if isinstance(wire, RefWire):
            wire = values.Value(0, self.resolve(wire.selector), None)
        row: tuple[int] | None = self.conn.execute(
            f"SELECT e FROM fgraph_facts WHERE a = ? AND t = ? AND v = ? AND {self.visible()}",
            (a, wire.t, wire.v)).fetchone()
        if row is None:
            raise NotFound(f"no entity has {attr} = {raw!r}", "check the value")
        return row[0]

    def attribute(self, attr: object) -> int:
        a = self.cat.id_by_name(attr) if isinstance(attr, str) else None
        if a is None:
            raise NotFound(f"attribute {described(attr) if isinstance(attr, str) else repr(attr)} was not found",
                           "check the attribute name")
        return a

    def one_value(self, e: int, a: int) -> SQLValue:
        row: tuple[SQLValue] | None = self.conn.execute(f"SELECT v FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ? AND a = ? AND {self.visible()} "
                                "ORDER BY id DESC LIMIT 1", (e, a)).fetchone()
        return row[0] if row else None

    def is_many(self, a: int, cache: dict[int, bool]) -> bool:
        if a not in cache:
            cache[a] = self.one_value(a, A_MANY) == 1
        return cache[a]

    # -- entity -----------------------------------------------------------------
    def entity(self, ref: JSON, depth: int = 1) -> JSONObject:
        strict_int(depth, "depth {value!r} must be a non-negative integer", "pass --depth 1 or more", low=0,
                   error=QueryError)
        return self._entity(self.resolve(ref), depth, (), {})

    def _entity(self, e: int, depth: int, path: tuple[int, ...], many: dict[int, bool]) -> JSONObject:
        out: JSONObject = {}
        rows = cast("list[tuple[int, Any, int]]", self.conn.execute(
            f"SELECT a, v, t FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ? AND {self.visible()} ORDER BY id",
            (e,)).fetchall())
        for a, v, t in rows:
            if t == values.TAG_REF and depth >= 2 and v not in path and v != e:
                rendered = self._entity(v, depth - 1, path + (e,), many)
            else:
                rendered = self.value(v, t)
            name: str = self.cat.name_of(a)  # type: ignore[assignment]  # every attribute has a name
            if self.is_many(a, many):
                out.setdefault(name, []).append(rendered)
            else:
                out[name] = rendered
        return out

    # -- history and why ----------------------------------------------------------
    def tx_meta(self, tx: int, cache: dict[int, JSONObject]) -> JSONObject:
        if tx not in cache:
            meta: JSONObject = {"at": self.cat.tx_at(tx)}
            for key, a in (("by", A_BY), ("source", A_SOURCE)):
                row = self.conn.execute(
                    "SELECT v, t FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ? AND a = ? AND tx = ?",
                    (tx, a, tx)).fetchone()
                if row is not None:
                    meta[key] = self.value(*row)  # long text is stored indirectly: render, never the key
            cache[tx] = meta
        return cache[tx]

    def tx_details(self, tx: int, cache: dict[int, JSONObject]) -> JSONObject:
        """What ``history(details=True)`` adds for a transaction: ``at_time`` (RFC 3339) and its ``meta``."""
        if tx not in cache:
            details: JSONObject = {"at_time": values.format_instant(self.cat.tx_at(tx))}  # type: ignore[arg-type]  # every transaction has its fgraph/at
            row = self.conn.execute(
                "SELECT v, t FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ? AND a = ? AND tx = ?",
                (tx, A_META, tx)).fetchone()
            if row is not None:
                details["meta"] = self.value(*row)["json"]
            cache[tx] = details
        return cache[tx]

    def history(self, ref: JSON, attr: str | None = None, *, details: bool = False) -> list[JSONObject]:
        e = self.resolve(ref)
        sql = f"SELECT id, e, a, v, t, tx, rx FROM fgraph_facts WHERE e = ? AND tx <= {self.basis}"
        args: tuple[int, ...] = (e,)
        if attr is not None:
            sql += " AND a = ?"
            args += (self.attribute(attr),)
        out: list[JSONObject]
        cache: dict[int, JSONObject]
        more: dict[int, JSONObject]
        out, cache, more = [], {}, {}
        for row in cast("list[FactRow]", self.conn.execute(sql + " ORDER BY id", args).fetchall()):
            fact = self.fact(*row)
            fact.update(self.tx_meta(row[5], cache))
            if details:
                fact.update(self.tx_details(row[5], more))
            if fact["rx"] is not None:
                for key, val in self.tx_meta(fact["rx"], cache).items():
                    fact["rx_" + key] = val
                for key, val in (self.tx_details(fact["rx"], more) if details else {}).items():
                    fact["rx_" + key] = val
            out.append(fact)
        return out

    def why(self, ref: JSON, attr: str | None = None) -> list[JSONObject]:
        e = self.resolve(ref)
        sql = f"SELECT id, e, a, v, t, tx, rx FROM fgraph_facts WHERE e = ? AND {self.visible()}"
        args: tuple[int, ...] = (e,)
        if attr is not None:
            sql += " AND a = ?"
            args += (self.attribute(attr),)
        out: list[JSONObject]
        cache: dict[int, JSONObject]
        out, cache = [], {}
        for row in cast("list[FactRow]", self.conn.execute(sql + " ORDER BY a, id", args).fetchall()):
            fact = self.fact(*row)
            if row[5] not in cache:
                cache[row[5]] = self._entity(row[5], 1, (), {})
            fact["provenance"] = cache[row[5]]
            out.append(fact)
        return out

    # -- time -----------------------------------------------------------------------
    def resolve_time(self, value: int | str, absolute: bool = False, *, since: bool = False,
                     now: int | None = None) -> int:
        """A transaction id, an event UUID, an RFC 3339 time or a duration before ``now`` ⇒ a
        transaction (core/timepoints: one grammar for every ``since`` and ``at``); ``since`` reads an
        integer that is no transaction as a position, else it is the published µs instant (09 §5).

        ``absolute`` resolves against the whole store rather than this view's basis.
        """
        cat = Catalog(self.conn, None, self.cat.cache) if absolute else self.cat
        return timepoints.resolve(cat, value, since=since, now=now)

    def diff(self, since: int | str, through: int | str) -> JSONObject:
        """Facts asserted and retracted in (since, through], as seen from this view."""
        lo, hi = self.resolve_time(since, absolute=True), self.resolve_time(through, absolute=True)
        if lo > hi:
            raise QueryError(f"diff window ({since!r}, {through!r}] runs backwards", "pass the earlier time first")
        hi = min(hi, self.basis)
        cols = "id, e, a, v, t, tx, rx"
        asserted = cast("list[FactRow]", self.conn.execute(
            f"SELECT {cols} FROM fgraph_facts WHERE tx > ? AND tx <= ? ORDER BY id", (lo, hi)).fetchall())
        retracted = cast("list[FactRow]", self.conn.execute(
            f"SELECT {cols} FROM fgraph_facts WHERE rx > ? AND rx <= ? ORDER BY id", (lo, hi)).fetchall())
        return {"asserted": [self.fact(*r) for r in asserted], "retracted": [self.fact(*r) for r in retracted]}

    # -- receipts and stats -------------------------------------------------------------
    def receipt(self, tx: int) -> JSONObject:
        strict_int(tx, "transaction {value!r} is not a 64-bit integer", "pass a transaction id", low=INT64_MIN,
                   high=INT64_MAX)
        if not (GENESIS_TX <= tx <= self.basis and self.cat.is_transaction(tx)):
            raise NotFound(f"transaction {tx} was not found", "use a transaction id returned by transact()")
        event_hash, operation_id, req_hash = self.cat.event_row(tx)  # type: ignore[misc]  # tx is a transaction
        out: JSONObject = {"read_basis_tx": self.basis, "basis_tx": self.cat.tx_before(tx) if tx > GENESIS_TX else GENESIS_TX, "tx": tx,
               "event": gid_to_uuid(self.cat.gid_of(tx)), "event_hash": "sha256:" + event_hash.hex(),
               "operation_id": operation_id,
               "request_hash": "sha256:" + req_hash.hex() if req_hash is not None else None}
        facts: list[JSONObject] = []
        rows = cast("list[FactRow]", self.conn.execute("SELECT id, e, a, v, t, tx, rx FROM fgraph_facts INDEXED BY fgraph_hist "
                                                       "WHERE e = ? AND tx = ? ORDER BY id",
                                                       (tx, tx)).fetchall())
        for row in rows:
            a, v, t = row[2], row[3], row[4]
            if a == A_AT:
                out["at"] = v
            elif a == A_BY:
                out["by"] = self.value(v, t)
            elif a == A_SOURCE:
                out["source"] = self.value(v, t)
            elif a == A_META:
                out["meta"] = self.value(v, t)["json"]
            elif a == A_IMPORTED_AT:
                out["imported_at"] = v
            else:
                facts.append(self.fact(*row))
        out["facts"] = facts  # last, after the transaction's own metadata, as the published server lists it
        return out

    def stats(self) -> dict[str, int]:
        return stats_at(self.conn, self.basis, self.path)
