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
from fgraph.core.canonical import dumps, format_float
from fgraph.core.catalog import Catalog
from fgraph.core.genesis import A_AT, A_IMPORTED_AT
from fgraph.core.identity import GENESIS_EVENT, gid_to_uuid
from fgraph.core.txn import read_transaction
from fgraph.core.limits import GENESIS_TX
from fgraph.core.errors import damaged
from fgraph.core.payload import payload_bytes, verified_text

SELECTOR_CACHE = 8192
DIGEST_BATCH = 512
DAY_US = 86_400_000_000


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
        at, plain_json(created) if created else "[]", event, event_data if event_data is not None else "null",
        event_hash.hex(), plain_json(operation_id), origin_at,
        '"%s"' % request_hash.hex() if request_hash is not None else "null")


def plain_json(value) -> str:
    """Canonical JSON of a stored text, None, or list of selectors (names and ``{"eid": uuid}``):
    orjson's text, canonical for these (02 §4); anything else (a damaged row) the canonical encoder."""
    if value is None or type(value) is str or (type(value) is list and all(
            type(x) is str or (type(x) is dict and x.keys() == {"eid"} and type(x["eid"]) is str) for x in value)):
        return orjson.dumps(value).decode()
    return dumps(value)


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
# The last four columns are for an observer of the fact lines (``FactObserver``), not the lines.
_FACTS = (
    "SELECT f.v, f.t, ie.name, ie.gid, ia.name, ia.gid, itx.gid, f.rx, irx.gid, f.id, f.e, f.a, f.tx "
    "FROM fgraph_facts AS f NOT INDEXED LEFT JOIN fgraph_ids AS ie ON ie.id = f.e "
    "LEFT JOIN fgraph_ids AS ia ON ia.id = f.a LEFT JOIN fgraph_ids AS itx ON itx.id = f.tx "
    "LEFT JOIN fgraph_ids AS irx ON irx.id = f.rx "
    f"WHERE f.tx > {GENESIS_TX} AND f.tx <= ? ORDER BY f.id")


class FactObserver:
    """Told of every fact line as it is made, with the canonical texts it is made of: a check
    that needs those bytes (doctor's asserting walk, in backup's one pass) reads them here
    instead of rendering every fact a second time. Any exception it raises stops the snapshot."""

    def fact(self, fact_id, e, a, tx, a_name, entity: str, attribute: str, value: str, tag: str) -> None:
        raise NotImplementedError


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


class _UuidCache(dict):
    """UUID texts of gids: anonymous entities and retracting transactions recur on many facts.
    Emptied when full, so it stays bounded."""

    def __missing__(self, gid) -> str:
        text = gid_to_uuid(gid)  # raises on a gid a damaged page lost: nothing is cached then
        if len(self) >= SELECTOR_CACHE:
            self.clear()
        self[gid] = text
        return text

    __call__ = dict.__getitem__


class InstantFormatter:
    """``format_instant`` with the date remembered: a store's instants fall on few days, and the
    date is most of the cost. A new day is formatted in full, which also checks the range (a
    day inside years 0001..9999 holds only instants inside them)."""

    def __init__(self):
        self.day, self.date = None, ""

    def __call__(self, us: int) -> str:
        day, rem = divmod(us, DAY_US)
        if day != self.day:
            text = values.format_instant(us)
            self.day, self.date = day, text[:11]  # "YYYY-MM-DDT"
            return text
        s, f = divmod(rem, 1_000_000)
        h, s = divmod(s, 3600)
        mi, s = divmod(s, 60)
        return f"{self.date}{h:02d}:{mi:02d}:{s:02d}.{f:06d}Z"


class _Counts:
    """How many receipt and fact lines were made: the footer's counts."""

    receipts = facts = 0


def _lines(conn, basis: int | None) -> Iterator[str]:
    digest, counts = hashlib.sha256(), _Counts()
    for line in _records(conn, basis, counts):
        digest.update(line.encode("utf-8") + b"\n")
        yield line
    yield _footer(counts, digest)


def _footer(counts: _Counts, digest) -> str:
    return dumps({"facts": counts.facts, "fgraph": "end", "receipts": counts.receipts, "sha256": digest.hexdigest()})


def _records(conn, basis: int | None, counts: _Counts, observer: FactObserver | None = None) -> Iterator[str]:
    """Every line before the footer; ``counts`` holds how many receipts and facts were made."""
    cat = Catalog(conn)
    basis = cat.latest_tx() if basis is None else basis
    sel = Selectors(conn)
    created_at = conn.execute("SELECT value FROM fgraph_meta WHERE key = 'created_at'").fetchone()[0]
    yield dumps({"basis": GENESIS_EVENT if basis == GENESIS_TX else sel.uuid(basis), "created_at": created_at,
                 "fgraph": "snapshot/1", "format": 2})
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
        counts.receipts += 1
        event = gid_to_uuid(gid)
        yield _receipt_line(tx, event_hash, verified_text(tx, event_data, event_hash, event), operation_id,
                            request_hash, at, imported if imported is not None else at, created, event)
    yield from _fact_lines(conn, basis, cat, sel, counts, observer)


def _fact_lines(conn, basis: int, cat: Catalog, sel: Selectors, counts: _Counts,
                observer: FactObserver | None) -> Iterator[str]:
    render, logical_name, indirect, text_json = values.render, values.logical_name, values.INDIRECT_TAGS, orjson.dumps
    tag_text, tag_int, tag_instant, tag_float, tag_ref = values.TAG_TEXT, values.TAG_INT, values.TAG_INSTANT, \
        values.TAG_FLOAT, values.TAG_REF
    format_instant = InstantFormatter()
    uuid_of = _UuidCache()
    observe = observer.fact if observer is not None else None
    attribute_texts: dict = {}  # attributes are few and repeat on every fact
    # A transaction's facts are consecutive in id order: its UUID is made once for all of them.
    last_tx_gid, tx_uuid, facts = None, None, 0
    for v, t, e_name, e_gid, a_name, a_gid, tx_gid, rx, rx_gid, fact_id, e, a, tx in conn.cursor().execute(
            _FACTS, (basis,)):
        if tx_gid != last_tx_gid or tx_uuid is None:
            tx_uuid, last_tx_gid = gid_to_uuid(tx_gid), tx_gid
        if e_name is not None:
            entity = text_json(e_name).decode()
        elif e_gid == tx_gid:
            entity = '{"eid":"%s"}' % tx_uuid
        else:
            entity = '{"eid":"%s"}' % uuid_of(e_gid)
        attribute = attribute_texts.get(a_name) if a_name is not None else None
        if attribute is None:
            attribute = _selector_text(a_name, a_gid)
            if a_name is not None and len(attribute_texts) < SELECTOR_CACHE:
                attribute_texts[a_name] = attribute
        # The commonest values, rendered as ``render`` + ``_value_text`` would, without either.
        if t == tag_text and type(v) is str:
            value, tag = text_json(v).decode(), "text"
        elif t == tag_int and type(v) is int:
            value, tag = str(v), "int"
        elif t == tag_instant and type(v) is int:
            value, tag = '{"instant":"%s"}' % format_instant(v), "instant"
        elif t == tag_float and type(v) is float:
            value, tag = format_float(v), "float"
        elif t == tag_ref:
            target = sel(v)
            value = '{"ref":%s}' % text_json(target).decode() if type(target) is str else _value_text({"ref": target})
            tag = "ref"
        else:
            value = _value_text(render(t, v, cat.blob(v) if t in indirect else None, sel))
            tag = logical_name(t)
        if observe is not None:
            observe(fact_id, e, a, tx, a_name, entity, attribute, value, tag)
        facts += 1
        if rx is None or rx > basis:
            yield '{"fact":[%s,%s,%s,"%s","%s",null]}' % (entity, attribute, value, tag, tx_uuid)
        else:
            yield '{"fact":[%s,%s,%s,"%s","%s","%s"]}' % (entity, attribute, value, tag, tx_uuid, uuid_of(rx_gid))
    counts.facts = facts


def logical_digest(conn, basis: int | None = None, observer: FactObserver | None = None) -> str:
    """The snapshot/1 footer sha256 at ``basis``, computed without writing the snapshot anywhere;
    ``observer`` is told of every fact line as it is made.

    It covers the header (basis event, created_at), every receipt and every fact, so two stores
    with equal digests hold the same logical content at that basis; any runtime can recompute it
    with ``fgraph snapshot | tail -1``.
    """
    digest, batch = hashlib.sha256(), []
    with read_transaction(conn):
        for line in _records(conn, basis, _Counts(), observer):
            batch.append(line)
            if len(batch) == DIGEST_BATCH:  # one update per batch: per line, the calls cost more than hashing
                batch.append("")
                digest.update("\n".join(batch).encode("utf-8"))
                batch.clear()
    batch.append("")
    digest.update("\n".join(batch).encode("utf-8"))
    return digest.hexdigest()
