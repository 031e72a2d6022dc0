"""snapshot/1: the exact logical content of a store as NDJSON (spec 05 §1).

One read transaction pins the basis, so concurrent writers never tear a
snapshot. Lines are produced one at a time with a running SHA-256, so memory
stays flat however large the store is.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Iterator

import orjson

from fgraph.core import values
from fgraph.core.canonical import dumps
from fgraph.core.catalog import Catalog
from fgraph.core.genesis import A_AT, A_IMPORTED_AT
from fgraph.core.identity import GENESIS_EVENT, gid_to_uuid
from fgraph.core.txn import read_transaction
from fgraph.core.limits import GENESIS_TX
from fgraph.core.errors import damaged
from fgraph.core.payload import payload_bytes, verified_text

SELECTOR_CACHE = 8192


class Selectors:
    """Portable selectors of identity ids, with a bounded cache (ids are permanent)."""

    def __init__(self, conn):
        self.conn = conn
        self.cache: OrderedDict[int, object] = OrderedDict()

    def __call__(self, ident: int):
        found = self.cache.get(ident)
        if found is None:
            row = self.conn.execute("SELECT name, gid FROM fgraph_ids WHERE id = ?", (ident,)).fetchone()
            if row is None:  # every id a fact or an event uses is registered: a damaged page lost it
                raise damaged(f"identity {ident} is used but missing from the identity registry")
            name, gid = row
            found = name if name is not None else {"eid": gid_to_uuid(gid)}
            self.cache[ident] = found
            if len(self.cache) > SELECTOR_CACHE:
                self.cache.popitem(last=False)
        return found

    def uuid(self, tx: int) -> str:
        return self(tx)["eid"]


def _receipt_line(tx, event_hash, event_data, operation_id, request_hash, at, origin_at, created, event) -> str:
    # Spliced rather than re-serialised: stored payloads are canonical event/1 text already,
    # and the keys below are in canonical (sorted) order.
    return ('{"receipt":{"at":%d,"created":%s,"event":"%s","event_data":%s,"event_hash":"%s","operation_id":%s,'
            '"origin_at":%d,"request_hash":%s}}') % (
        at, dumps(created), event, event_data if event_data is not None else "null", event_hash.hex(),
        dumps(operation_id), origin_at, dumps(request_hash.hex() if request_hash is not None else None))


def iter_snapshot(conn, basis: int | None = None) -> Iterator[str]:
    """Canonical snapshot lines (without LF) at ``basis`` (default: the latest transaction)."""
    with read_transaction(conn):
        yield from _lines(conn, basis)


# One pass per section, with every identity lookup joined in SQLite instead of asked one row at
# a time from Python: receipts carry their transaction's gid and fgraph/at / imported-at, facts
# their entity, attribute, transaction and retracting transaction. The facts are scanned in rowid
# (= id) order, so no sort is needed however large the store is. The joins are LEFT joins (as
# fixed in order as CROSS joins) so that an identity a damaged page lost stops the snapshot with
# a typed error (``gid_to_uuid`` of nothing) instead of leaving its facts out of a "complete" copy.
_RECEIPTS = (
    f"SELECT ev.tx, ev.event_hash, {payload_bytes('ev.event_data')}, ev.operation_id, ev.request_hash, ids.gid, "
    f"(SELECT v FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ev.tx AND a = {A_AT} AND tx = ev.tx), "
    f"(SELECT v FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ev.tx AND a = {A_IMPORTED_AT} AND tx = ev.tx) "
    "FROM fgraph_events AS ev LEFT JOIN fgraph_ids AS ids ON ids.id = ev.tx "
    f"WHERE ev.tx > {GENESIS_TX} AND ev.tx <= ? ORDER BY ev.tx")
_FACTS = (
    "SELECT f.v, f.t, ie.name, ie.gid, ia.name, ia.gid, itx.gid, f.rx, irx.gid "
    "FROM fgraph_facts AS f NOT INDEXED LEFT JOIN fgraph_ids AS ie ON ie.id = f.e "
    "LEFT JOIN fgraph_ids AS ia ON ia.id = f.a LEFT JOIN fgraph_ids AS itx ON itx.id = f.tx "
    "LEFT JOIN fgraph_ids AS irx ON irx.id = f.rx "
    f"WHERE f.tx > {GENESIS_TX} AND f.tx <= ? ORDER BY f.id")


def _selector_text(name, gid) -> str:
    """The canonical JSON of a selector: the name, else ``{"eid": uuid}``. A stored name is valid
    text, whose canonical form is orjson's (02 §4: no escapes beyond JSON's own)."""
    return orjson.dumps(name).decode() if name is not None else '{"eid":"%s"}' % gid_to_uuid(gid)


def _value_text(value) -> str:
    """Canonical JSON of a rendered value; text and in-range integers (most values) skip the scan."""
    kind = type(value)
    if kind is str:
        return orjson.dumps(value).decode()
    if kind is int and -9223372036854775808 <= value <= 9223372036854775807:
        return str(value)
    return dumps(value)


def _lines(conn, basis: int | None) -> Iterator[str]:
    cat = Catalog(conn)
    basis = cat.latest_tx() if basis is None else basis
    sel = Selectors(conn)
    digest = hashlib.sha256()

    def emit(line: str) -> str:
        digest.update(line.encode("utf-8") + b"\n")
        return line

    created_at = conn.execute("SELECT value FROM fgraph_meta WHERE key = 'created_at'").fetchone()[0]
    yield emit(dumps({"basis": GENESIS_EVENT if basis == GENESIS_TX else sel.uuid(basis), "created_at": created_at,
                      "fgraph": "snapshot/1", "format": 2}))
    receipts = 0
    created_rows = conn.cursor().execute(
        f"SELECT created_tx, id, name, gid FROM fgraph_ids WHERE created_tx > {GENESIS_TX} AND created_tx <= ? "
        "ORDER BY created_tx, id", (basis,))
    pending = next(created_rows, None)
    for tx, event_hash, event_data, operation_id, request_hash, gid, at, imported in conn.cursor().execute(
            _RECEIPTS, (basis,)):
        created = []
        while pending is not None and pending[0] <= tx:
            if pending[0] == tx and pending[1] != tx:
                created.append(pending[2] if pending[2] is not None else {"eid": gid_to_uuid(pending[3])})
            pending = next(created_rows, None)
        receipts += 1
        event = gid_to_uuid(gid)
        yield emit(_receipt_line(tx, event_hash, verified_text(tx, event_data, event_hash, event), operation_id,
                                 request_hash, at, imported if imported is not None else at, created, event))
    facts = 0
    render, logical_name, indirect = values.render, values.logical_name, values.INDIRECT_TAGS
    attribute_texts: dict = {}  # attributes are few and repeat on every fact

    def attribute_text(name, gid) -> str:
        text = attribute_texts.get(name)
        if text is None:
            text = _selector_text(name, gid)
            if name is not None and len(attribute_texts) < SELECTOR_CACHE:
                attribute_texts[name] = text
        return text

    for v, t, e_name, e_gid, a_name, a_gid, tx_gid, rx, rx_gid in conn.cursor().execute(_FACTS, (basis,)):
        blob = cat.blob(v) if t in indirect else None
        retracted = '"%s"' % gid_to_uuid(rx_gid) if rx is not None and rx <= basis else "null"
        facts += 1
        yield emit('{"fact":[%s,%s,%s,"%s","%s",%s]}' % (
            _selector_text(e_name, e_gid), attribute_text(a_name, a_gid), _value_text(render(t, v, blob, sel)),
            logical_name(t), gid_to_uuid(tx_gid), retracted))
    yield dumps({"facts": facts, "fgraph": "end", "receipts": receipts, "sha256": digest.hexdigest()})


def logical_digest(conn, basis: int | None = None) -> str:
    """The snapshot/1 footer sha256 at ``basis``, computed without writing the snapshot anywhere.

    It covers the header (basis event, created_at), every receipt and every fact, so two stores
    with equal digests hold the same logical content at that basis; any runtime can recompute it
    with ``fgraph snapshot | tail -1``.
    """
    footer = None
    for footer in iter_snapshot(conn, basis):  # noqa: B007 - the last line is the footer
        pass
    return footer[footer.rindex('"sha256":"') + 10:-2]
