"""snapshot/1: the exact logical content of a store as NDJSON (spec 05 §1).

One read transaction pins the basis, so concurrent writers never tear a
snapshot. Lines are produced one at a time with a running SHA-256, so memory
stays flat however large the store is.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Iterator

from fgraph.core import values
from fgraph.core.canonical import dumps
from fgraph.core.catalog import Catalog
from fgraph.core.identity import GENESIS_EVENT, gid_to_uuid
from fgraph.core.txn import read_transaction
from fgraph.core.limits import GENESIS_TX

SELECTOR_CACHE = 8192


class Selectors:
    """Portable selectors of identity ids, with a bounded cache (ids are permanent)."""

    def __init__(self, conn):
        self.conn = conn
        self.cache: OrderedDict[int, object] = OrderedDict()

    def __call__(self, ident: int):
        found = self.cache.get(ident)
        if found is None:
            name, gid = self.conn.execute("SELECT name, gid FROM fgraph_ids WHERE id = ?", (ident,)).fetchone()
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
    for tx, event_hash, event_data, operation_id, request_hash in conn.cursor().execute(
            "SELECT tx, event_hash, event_data, operation_id, request_hash FROM fgraph_events "
            f"WHERE tx > {GENESIS_TX} AND tx <= ? ORDER BY tx", (basis,)):
        created = []
        while pending is not None and pending[0] <= tx:
            if pending[0] == tx and pending[1] != tx:
                created.append(pending[2] if pending[2] is not None else {"eid": gid_to_uuid(pending[3])})
            pending = next(created_rows, None)
        at = cat.tx_at(tx)
        imported = cat.imported_at(tx)
        receipts += 1
        yield emit(_receipt_line(tx, event_hash, event_data, operation_id, request_hash, at,
                                 imported if imported is not None else at, created, sel.uuid(tx)))
    facts = 0
    for e, a, v, t, tx, rx in conn.cursor().execute(
            f"SELECT e, a, v, t, tx, rx FROM fgraph_facts WHERE tx > {GENESIS_TX} AND tx <= ? ORDER BY id", (basis,)):
        blob = cat.blob(v) if t in values.INDIRECT_TAGS else None
        facts += 1
        yield emit(dumps({"fact": [sel(e), sel(a), values.render(t, v, blob, sel), values.logical_name(t),
                                   sel.uuid(tx), sel.uuid(rx) if rx is not None and rx <= basis else None]}))
    yield dumps({"facts": facts, "fgraph": "end", "receipts": receipts, "sha256": digest.hexdigest()})


def logical_digest(conn, basis: int | None = None) -> str:
    """The snapshot/1 footer sha256 at ``basis``, computed without writing the snapshot anywhere.

    It covers the header (basis event, created_at), every receipt and every fact, so two stores
    with equal digests hold the same logical content at that basis; any runtime can recompute it
    with ``fgraph snapshot | tail -1``.
    """
    footer = None
    for footer in iter_snapshot(conn, basis):
        pass
    return footer[footer.rindex('"sha256":"') + 10:-2]
