"""The content digest: one line that two copies holding the same knowledge share (issue 48 item 6).

``info --digest`` (the snapshot/1 footer) covers the store's own genesis, and every receipt with
its local receipt time, so two centrals fanned in from the same sources never share it. The
content digest covers only what travels between stores, byte for byte: the canonical event/1
lines, in the order of their event UUIDs rather than of local arrival.

    content_digest = sha256( line(e1) LF line(e2) LF … )   for the events e1 < e2 < … by UUID

- every event after genesis at or before the basis, as ``tail`` prints it: the stored canonical
  line, or, for an excised event, its redaction stub (its UUID, original time and the hash of the
  erased line, identical in every store that carried the excision);
- except genesis (each store's own creation) and the excision events themselves (the transactions
  holding ``fgraph/excised``: each store that carries an excision out records it under a UUID and
  at a time of its own; what it did is in the stubs it left).

The UUIDs are read in order from the unique index on ``fgraph_ids.gid`` (the UUID's 16 bytes sort
as its hex does), a page at a time, and the lines are hashed as they come: memory stays bounded
whatever the number of events, and no sort of all lines is ever made. Every payload is checked
against its stored hash first, as ``tail`` does (damage is a ``FormatError``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from fgraph.core.catalog import Catalog
from fgraph.core.genesis import A_EXCISED
from fgraph.core.identity import gid_to_uuid
from fgraph.core.limits import GENESIS_TX
from fgraph.core.payload import payload_bytes, verified_text
from fgraph.core.txn import read_transaction
from fgraph.streams.events import redacted_stub

PAGE = 512   # events read per statement
#: the unique index SQLite makes for ``fgraph_ids.gid`` (the second UNIQUE column of the normative DDL)
GID_INDEX = "sqlite_autoindex_fgraph_ids_2"
EVENTS_SQL = (f"SELECT i.gid, e.tx, {payload_bytes('e.event_data')}, e.event_hash "
           f"FROM fgraph_ids i INDEXED BY {GID_INDEX} JOIN fgraph_events e ON e.tx = i.id "
           "WHERE i.gid > ? AND e.tx > ? AND e.tx <= ? "
           "AND NOT EXISTS (SELECT 1 FROM fgraph_facts x INDEXED BY fgraph_hist "
           "                WHERE x.e = e.tx AND x.a = ? AND x.tx = e.tx) "
           "ORDER BY i.gid LIMIT ?")


def content_lines(conn, basis: int) -> Iterator[str]:
    """The lines the content digest covers at ``basis``, in UUID order (no LF); call inside a read transaction."""
    cat = Catalog(conn)
    after = b""
    while True:
        rows = conn.execute(EVENTS_SQL, (after, GENESIS_TX, basis, A_EXCISED, PAGE)).fetchall()
        for gid, tx, data, event_hash in rows:
            if data is None:
                yield redacted_stub(cat, tx, event_hash)
            else:
                text = verified_text(tx, data, event_hash, lambda gid=gid: gid_to_uuid(gid))
                assert text is not None
                yield text
        if len(rows) < PAGE:
            return
        after = rows[-1][0]


def content_digest(conn, basis: int | None = None) -> dict:
    """``{"basis_tx", "content_digest", "content_events"}`` at ``basis`` (the latest when None)."""
    digest, count = hashlib.sha256(), 0
    with read_transaction(conn):
        if basis is None:
            basis = conn.execute("SELECT coalesce(max(tx), ?) FROM fgraph_events", (GENESIS_TX,)).fetchone()[0]
        for line in content_lines(conn, basis):
            digest.update(line.encode("utf-8"))
            digest.update(b"\n")
            count += 1
    return {"basis_tx": basis, "content_digest": digest.hexdigest(), "content_events": count}


def digests_at(conn, basis: int | None = None, *, logical: bool = True, content: bool = True) -> dict:
    """``basis_tx`` and, read at that basis in one transaction, the logical digest (``digest``, the
    snapshot/1 footer) and the content digest (``content_digest``, ``content_events``), as asked."""
    from fgraph.streams.snapshot import logical_digest
    with read_transaction(conn):
        if basis is None:
            basis = conn.execute("SELECT coalesce(max(tx), ?) FROM fgraph_events", (GENESIS_TX,)).fetchone()[0]
        out = content_digest(conn, basis) if content else {"basis_tx": basis}
        if logical:
            out["digest"] = logical_digest(conn, basis)
    return out
