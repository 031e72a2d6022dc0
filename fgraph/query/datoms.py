"""``datoms``: one index paged at a basis (spec 12 §8), with cursors that pin the basis.

A page is one SQL statement: the datoms of the source (live facts, or assertion and
retraction datoms for ``history``) filtered by the component prefix, ordered by the index's
seek key ``[.., t, tx, added, fact_id]`` in SQLite's own value order, resumed after the
cursor's key with a row-value comparison, ``LIMIT n + 1`` to know whether a next page exists.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

from fgraph.core.asof import visible_at
from fgraph.core import values
from fgraph.core.canonical import dumps, loads
from fgraph.core.catalog import Catalog
from fgraph.core.checks import is_strict_int, strict_int
from fgraph.core.errors import FgraphError, NotFound, QueryError, ValueTypeError
from fgraph.core.limits import DATOMS_LIMIT, DATOMS_MAX_LIMIT
from fgraph.core.values import TAG_REF, RefWire
from fgraph.query.datalog.results import Renderer
from fgraph.query.datalog.terms import Terms

INDEXES = {"eavt": ("e", "a", "v", "tx", "added"), "avet": ("a", "v", "e", "tx", "added"),
           "vaet": ("v", "a", "e", "tx", "added")}
SEEK = {"eavt": ("e", "a", "v", "t", "dtx", "added", "id"), "avet": ("a", "v", "e", "t", "dtx", "added", "id"),
        "vaet": ("v", "a", "e", "t", "dtx", "added", "id")}
CURSOR_VERSION = 2


class _Empty(Exception):
    """A component names nothing at this basis: the page is empty."""


def _check(index, components, source, limit) -> list:
    if type(index) is not str or index not in INDEXES:
        raise QueryError(f"datoms index {index!r} is not one of eavt, avet, vaet", 'pass "eavt", "avet" or "vaet"')
    if type(components) not in (list, tuple):
        raise QueryError("datoms components must be an array", 'pass ["ada", "person/name"]')
    if len(components) > 5:
        raise QueryError(f"datoms takes at most 5 components, got {len(components)}", "drop trailing components")
    if type(source) is not str or source not in ("current", "history"):
        raise QueryError(f"datoms source {source!r} is not valid", 'use "current" or "history"')
    strict_int(limit, "datoms limit {value!r} must be an integer from {low} to {high}", f"pass --limit {DATOMS_LIMIT}",
               low=1, high=DATOMS_MAX_LIMIT, error=QueryError)
    return list(components)


def _args_hash(components: list) -> str:
    return hashlib.sha256(dumps(components).encode("utf-8")).hexdigest()


def encode_cursor(doc: dict) -> str:
    return base64.urlsafe_b64encode(dumps(doc).encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor, index: str, source: str, components: list, view_basis: int, cat) -> tuple[int, list]:
    bad = QueryError(f"datoms cursor {str(cursor)[:60]!r} is not valid", "pass the next_cursor of the previous page")
    if type(cursor) is not str or not cursor or "=" in cursor:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        if encode_cursor(loads(raw.decode("utf-8"))) != cursor:
            raise bad
        doc = loads(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError, FgraphError):
        raise bad from None
    if type(doc) is not dict or set(doc) != {"args", "basis", "index", "seek", "source", "v"} or doc["v"] != CURSOR_VERSION:
        raise bad
    if doc["index"] != index or doc["source"] != source or doc["args"] != _args_hash(components):
        raise QueryError("datoms cursor belongs to another index, source or components",
                         "repeat the call with the index, source and components of the first page")
    basis, seek = doc["basis"], doc["seek"]
    if not is_strict_int(basis) or type(seek) is not list or len(seek) != 7:
        raise bad
    if basis > view_basis:
        raise QueryError(f"datoms cursor is at transaction {basis}, after this view's {view_basis}",
                         "page this view with cursors it gave")
    if not cat.is_transaction(basis):
        raise bad
    try:
        seek = [_seek_in(x) for x in seek]
    except (TypeError, ValueError, FgraphError):
        raise bad from None
    return basis, seek


def _seek_out(stored):
    """A stored key value in cursor JSON: BLOBs (bytes, hashes of indirect values) as {"bytes": base64}."""
    if isinstance(stored, bytes):
        return {"bytes": base64.b64encode(stored).decode("ascii")}
    return stored


def _seek_in(raw):
    if type(raw) is dict and set(raw) == {"bytes"}:
        return values.decode_base64(raw["bytes"])
    if type(raw) in (int, float, str):
        return raw
    raise ValueError("not a stored key value")


def _component(terms: Terms, reader, role: str, raw, index: str, first: bool):
    """A component as (datom column, stored value) equalities; raises _Empty when it names nothing."""
    if role in ("e", "tx") or (role == "v" and index == "vaet"):
        if raw is None or (type(raw) is dict and "ref" in raw and not (role == "v" and index == "vaet")):
            raise ValueTypeError(f"datoms {role} component {raw!r} is not an entity selector",
                                 "use a name, an id, a lookup or an eid")
        selector = raw["ref"] if type(raw) is dict and set(raw) == {"ref"} else raw
        try:
            ident = reader.resolve(selector)
        except NotFound:
            if first and index == "vaet" and type(selector) is str:
                raise
            raise _Empty() from None
        if role == "v":
            return [("t", TAG_REF), ("v", ident)]
        return [("e" if role == "e" else "dtx", ident)]
    if role == "a":
        a = reader.cat.id_by_name(raw) if type(raw) is str else None
        if a is None:
            raise _Empty()
        return [("a", a)]
    if role == "added":
        if type(raw) is not bool:
            raise ValueTypeError(f"datoms added component {raw!r} is not a boolean", "pass true or false")
        return [("added", int(raw))]
    wire = values.from_wire(raw)
    if isinstance(wire, RefWire):
        try:
            return [("t", TAG_REF), ("v", reader.resolve(wire.selector))]
        except NotFound:
            raise _Empty() from None
    return [("t", wire.t), ("v", wire.v)]


def datoms(reader, index="eavt", components=(), *, source="current", limit=DATOMS_LIMIT, cursor=None) -> dict:
    """One page of ``index`` at the reader's basis, or at the cursor's."""
    components = _check(index, components, source, limit)
    basis = reader.basis
    seek = None
    if cursor is not None:
        basis, seek = decode_cursor(cursor, index, source, components, reader.basis, reader.cat)
        if basis != reader.basis:
            from fgraph.core.reads import Reader
            reader = Reader(reader.conn, basis, reader.path)
    latest = Catalog(reader.conn).latest_tx()
    live = visible_at(basis, latest, "f")
    terms = Terms(reader.conn, reader.cat, live.replace("f.", ""))
    page = {"basis_tx": basis, "items": [], "next_cursor": None}
    try:
        conds = [c for k, raw in enumerate(components)
                 for c in _component(terms, reader, INDEXES[index][k], raw, index, k == 0)]
    except _Empty:
        return page
    if source == "current":
        datom_sql = f"SELECT f.id, f.e, f.a, f.v, f.t, f.tx AS dtx, 1 AS added FROM fgraph_facts f WHERE {live}"
    else:
        datom_sql = (f"SELECT f.id, f.e, f.a, f.v, f.t, f.tx AS dtx, 1 AS added FROM fgraph_facts f WHERE f.tx <= {basis} "
                     f"UNION ALL SELECT f.id, f.e, f.a, f.v, f.t, f.rx AS dtx, 0 AS added FROM fgraph_facts f "
                     f"WHERE f.rx IS NOT NULL AND f.rx <= {basis}")
    where = [f"d.{column} = ?" for column, _ in conds]
    params = [p for _, p in conds]
    if index == "vaet":
        where.append(f"d.t = {TAG_REF}")
    key = [f"d.{c}" for c in SEEK[index]]
    if seek is not None:
        where.append(f"({', '.join(key)}) > ({', '.join('?' * 7)})")
        params += seek
    sql = (f"SELECT d.id, d.e, d.a, d.v, d.t, d.dtx, d.added FROM ({datom_sql}) d "
           f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY {', '.join(key)} LIMIT ?")
    rows = reader.conn.execute(sql, params + [limit + 1]).fetchall()
    render = Renderer(reader.cat, terms)
    for fact_id, e, a, v, t, dtx, added in rows[:limit]:
        page["items"].append({"e": render.ref(e), "a": reader.cat.name_of(a), "v": render(t, v), "tx": dtx,
                              "added": bool(added), "fact_id": fact_id})
    if len(rows) > limit:
        fact_id, e, a, v, t, dtx, added = rows[limit - 1]
        by_role = {"e": e, "a": a, "v": v, "t": t, "dtx": dtx, "added": added, "id": fact_id}
        page["next_cursor"] = encode_cursor({"args": _args_hash(components), "basis": basis, "index": index,
                                             "seek": [_seek_out(by_role[c]) for c in SEEK[index]], "source": source,
                                             "v": CURSOR_VERSION})
    return page
