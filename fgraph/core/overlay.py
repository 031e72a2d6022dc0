"""The overlay of a bulk apply: rows planned and written in memory, flushed to SQLite in batches.

A bulk apply (spec 04 §5, issue 17) plans each event with the same planner and writer as
a direct write, so every rule is the same; what changes is where the rows go. ``BufferedRows``
records them here instead of running one statement per row, ``OverlayCatalog`` answers the
planner's reads from these pending rows first and SQLite second, and ``flush`` writes
the batch with one ``executemany`` per table. A read the overlay cannot answer from its
indexes (whole-entity scans, schema-wide checks, orphan blobs) flushes first, so every
read sees exactly what the event-at-a-time path would have seen.

Row identity is what makes the result byte-identical: fact ids are allocated here in the
order SQLite's AUTOINCREMENT would have given them, and a fact inserted and deleted in
one batch (nohistory) is still inserted and deleted at the flush, so ``sqlite_sequence``
ends where it would have.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import apsw

from fgraph.core.catalog import Catalog, IdentityCache
from fgraph.core.genesis import A_AT
from fgraph.core.rows import FTS_TAGS, Rows
from fgraph.core.values import INDIRECT_TAGS, TAG_TEXT

if TYPE_CHECKING:
    from fgraph.core.catalog import EventRow, IdentityRow

DELETED = 0   # ``Overlay.ended`` value of a stored fact a nohistory retraction deletes


class Overlay:
    """Rows of the current batch not yet in SQLite, indexed for the planner's reads."""

    def __init__(self, conn: apsw.Connection, cache: IdentityCache):
        self.conn, self.cache = conn, cache
        row = conn.execute("SELECT max((SELECT coalesce(max(seq), 0) FROM sqlite_sequence "
                           "WHERE name = 'fgraph_facts'), (SELECT coalesce(max(id), 0) FROM fgraph_facts))").fetchone()
        self.next_fact_id: int = row[0] + 1  # type: ignore[index]  # max() always has a row
        self._reset()

    def _reset(self) -> None:
        self.ids: dict[int, IdentityRow] = {}          # id -> (name, gid, created_tx)
        self.by_name: dict[str, int] = {}
        self.by_gid: dict[bytes, int] = {}
        # tx -> (hash, payload, operation_id, request_hash)
        self.events: dict[int, tuple[bytes, str | None, str | None, bytes | None]] = {}
        self.txs: list[int] = []                       # ascending
        self.receipts: dict[int, int] = {}             # tx -> its own fgraph/at
        self.facts: dict[int, list[Any]] = {}          # fact id -> [e, a, v, t, tx, rx], ascending ids
        self.live: dict[tuple[int, int], dict[int, None]] = {}    # (e, a) -> {fact id: None}, pending live facts
        self.by_value: dict[tuple[int, int, Any], list[int]] = {}  # (a, t, v) -> pending fact ids
        self.dropped: list[int] = []                   # pending facts deleted again (nohistory)
        self.texts: dict[int, str] = {}                # pending live text facts -> FTS text
        self.ended: dict[int, tuple[int, int]] = {}    # stored fact id -> (rx or DELETED, t)
        self.blobs: dict[bytes, str | bytes] = {}
        self.next_id: int | None = None
        self.value_bytes = 0                           # text, bytes and blobs held: the other memory bound
        self.stored_before_registered: set[int] = set()   # entities of facts the last flush wrote

    def __len__(self) -> int:
        return len(self.facts) + len(self.ended) + len(self.ids)

    # -- flushing ---------------------------------------------------------------------
    def flush(self) -> None:
        """Write every pending row (stored facts ended first, so the live unique index never
        sees two live copies of one fact) and start an empty batch."""
        if not (self.facts or self.ended or self.ids or self.events or self.next_id is not None):
            return
        rows = Rows(self.conn)
        ended = sorted(self.ended.items())
        rows.end_facts((rx, fact_id) for fact_id, (rx, _) in ended if rx != DELETED)
        rows.drop_facts(fact_id for fact_id, (rx, _) in ended if rx == DELETED)
        rows.unindex_facts(fact_id for fact_id, (_, t) in ended if t in FTS_TAGS)
        rows.blobs(self.blobs.items())
        rows.identities((ident, *row) for ident, row in sorted(self.ids.items()))
        rows.facts_with_ids((fact_id, *row) for fact_id, row in self.facts.items())
        rows.drop_facts(self.dropped)
        rows.index_facts(sorted(self.texts.items()))
        rows.events((tx, *self.events[tx]) for tx in self.txs)
        if self.next_id is not None:
            rows.next_id(self.next_id)
        for ident, (name, gid, created_tx) in self.ids.items():
            self.cache.remember(ident, name, gid, created_tx)
        # A flush inside a commit (free_blobs) writes facts of identities the commit registers only
        # afterwards, in the next batch: those do have stored facts (see OverlayCatalog.live_values).
        flushed = {row[0] for row in self.facts.values() if row[0] not in self.ids}
        self._reset()
        self.stored_before_registered = flushed

    # -- recording (BufferedRows) -------------------------------------------------------
    def add_fact(self, e: int, a: int, v: Any, t: int, blob: Any, tx: int, rx: int | None) -> int:
        # ``v`` and ``blob`` have the types tag ``t`` gives them (see Rows.fact)
        fact_id = self.next_fact_id
        self.next_fact_id += 1
        self.facts[fact_id] = [e, a, v, t, tx, rx]
        if type(v) is str or type(v) is bytes:
            self.value_bytes += len(v)
        if blob is not None and t in INDIRECT_TAGS:
            self.blobs.setdefault(v, blob)
            self.value_bytes += len(blob)
        if rx is None:
            self.live.setdefault((e, a), {})[fact_id] = None
            self.by_value.setdefault((a, t, v), []).append(fact_id)
            if t in FTS_TAGS:
                self.texts[fact_id] = v if t == TAG_TEXT else blob
        if a == A_AT and e == tx:
            self.receipts[tx] = v
        return fact_id

    def end_fact(self, fact_id: int, t: int, tx: int, delete: bool) -> None:
        row = self.facts.get(fact_id)
        if row is None:
            self.ended[fact_id] = (DELETED if delete else tx, t)
            return
        self.live[(row[0], row[1])].pop(fact_id, None)
        self.texts.pop(fact_id, None)
        row[5] = tx
        if delete:
            self.dropped.append(fact_id)

    def add_identity(self, ident: int, name: str | None, gid: bytes | None, created_tx: int) -> None:
        if (gid is not None and gid in self.by_gid) or ident in self.ids:
            raise apsw.ConstraintError("UNIQUE constraint failed: fgraph_ids.gid")
        self.ids[ident] = (name, gid, created_tx)
        if name is not None:
            self.by_name[name] = ident
        if gid is not None:
            self.by_gid[gid] = ident

    def full(self, rows: int, value_bytes: int) -> bool:
        """Past either bound: time to flush."""
        return len(self) >= rows or self.value_bytes >= value_bytes

    def add_event(self, tx: int, text: str | None, digest: bytes, operation_id: str | None,
                  request_hash: bytes | None) -> None:
        self.events[tx] = (digest, text, operation_id, request_hash)
        if text is not None:
            self.value_bytes += len(text)
        self.txs.append(tx)

    # -- reads (OverlayCatalog) -----------------------------------------------------------
    def live_facts(self, e: int, a: int) -> list[tuple[int, object, int, int]]:
        facts = self.facts
        return [(fact_id, facts[fact_id][2], facts[fact_id][3], facts[fact_id][4])
                for fact_id in self.live.get((e, a), ())]

    def live_holders(self, a: int, v: object, t: int) -> list[int]:
        facts = self.facts
        return [facts[fact_id][0] for fact_id in self.by_value.get((a, t, v), ()) if facts[fact_id][5] is None]


class BufferedRows(Rows):
    """The writer of a bulk apply: facts, retractions, identities and events go to the overlay."""

    __slots__ = ("overlay",)

    def __init__(self, overlay: Overlay):
        super().__init__(overlay.conn)
        self.overlay = overlay

    def fact(self, e: int, a: int, v: Any, t: int, blob: str | bytes | None, tx: int, rx: int | None = None) -> int:
        return self.overlay.add_fact(e, a, v, t, blob, tx, rx)

    def retract(self, fact_id: int, v: Any, t: int, tx: int, *, delete: bool) -> bytes | None:
        self.overlay.end_fact(fact_id, t, tx, delete)
        return v if delete and t in INDIRECT_TAGS else None

    def free_blobs(self, keys: Iterable[bytes | None]) -> None:
        keys = list(keys)
        if keys:
            self.overlay.flush()      # whether a blob is orphaned is a question for the whole table
            super().free_blobs(keys)

    def identities(self, rows: Iterable[tuple[int, str | None, bytes | None, int]]) -> None:
        rows = list(rows)
        gids = [row[2] for row in rows if row[2] is not None]
        if len(set(gids)) != len(gids):
            raise apsw.ConstraintError("UNIQUE constraint failed: fgraph_ids.gid")
        for row in rows:
            self.overlay.add_identity(*row)

    def event(self, tx: int, text: str | None, digest: bytes, operation_id: str | None = None,
              request_hash: bytes | None = None) -> None:
        self.overlay.add_event(tx, text, digest, operation_id, request_hash)

    def next_id(self, value: int) -> None:
        self.overlay.next_id = value


class OverlayCatalog(Catalog):
    """The catalog of a bulk apply: pending rows first, then SQLite (never a historical view)."""

    def __init__(self, conn: apsw.Connection, overlay: Overlay, cache: IdentityCache):
        super().__init__(conn, cache=cache)
        self.overlay = overlay

    def settled(self) -> apsw.Connection:
        self.overlay.flush()
        return self.conn

    # -- identities -------------------------------------------------------
    def identity(self, ident: int) -> IdentityRow | None:
        row = self.overlay.ids.get(ident)
        return row if row is not None else super().identity(ident)

    def id_by_name(self, name: str) -> int | None:
        found = self.overlay.by_name.get(name)
        return found if found is not None else super().id_by_name(name)

    def id_by_gid(self, gid: bytes) -> int | None:
        found = self.overlay.by_gid.get(gid)
        return found if found is not None else super().id_by_gid(gid)

    def name_of(self, ident: int) -> str | None:
        row = self.overlay.ids.get(ident)
        return row[0] if row is not None else super().name_of(ident)

    def gid_of(self, ident: int) -> bytes | None:
        row = self.overlay.ids.get(ident)
        return row[1] if row is not None else super().gid_of(ident)

    def is_transaction(self, ident: int) -> bool:
        return ident in self.overlay.events or super().is_transaction(ident)

    def next_id(self) -> int:
        pending = self.overlay.next_id
        return pending if pending is not None else super().next_id()

    # -- transactions -----------------------------------------------------
    def latest_tx(self) -> int:
        txs = self.overlay.txs
        return txs[-1] if txs else super().latest_tx()

    def tx_before(self, tx: int) -> int:
        txs = self.overlay.txs
        index = bisect.bisect_left(txs, tx)
        return txs[index - 1] if index > 0 else super().tx_before(tx)

    def tx_at(self, tx: int) -> int | None:
        found = self.overlay.receipts.get(tx)
        return found if found is not None else super().tx_at(tx)

    def imported_at(self, tx: int) -> int | None:
        self.settled()
        return super().imported_at(tx)

    def tx_for_instant(self, instant: int, basis: int | None = None) -> int | None:
        self.settled()
        return super().tx_for_instant(instant, basis)

    def event_row(self, tx: int) -> EventRow | None:
        found = self.overlay.events.get(tx)  # (hash, payload, operation_id, request_hash)
        return (found[0], found[2], found[3]) if found is not None else super().event_row(tx)

    def operation(self, operation_id: str) -> tuple[int, bytes | None] | None:
        self.settled()
        return super().operation(operation_id)

    # -- facts ------------------------------------------------------------
    def live_values(self, e: int, a: int) -> list[tuple[int, object, int, int]]:
        ended = self.overlay.ended
        # An identity registered in this batch has no stored facts yet (unless a flush inside its
        # commit wrote them before it was registered): no query.
        overlay = self.overlay
        fresh = e in overlay.ids and e not in overlay.stored_before_registered
        stored = [] if fresh else super().live_values(e, a)
        if ended:
            stored = [row for row in stored if row[0] not in ended]
        pending = self.overlay.live_facts(e, a)
        return stored + pending if pending else stored

    def live_owners(self, a: int, v: object, t: int) -> list[int]:
        ended = self.overlay.ended
        stored = [e for fact_id, e in self.conn.execute(
            "SELECT id, e FROM fgraph_facts WHERE a = ? AND t = ? AND v = ? AND rx IS NULL ORDER BY id", (a, t, v))
            if fact_id not in ended]
        return stored + self.overlay.live_holders(a, v, t)

    def fact_tx(self, fact_id: int) -> int:
        row = self.overlay.facts.get(fact_id)
        return row[4] if row is not None else super().fact_tx(fact_id)

    def live_attributes(self, e: int) -> list[int]:
        self.settled()
        return super().live_attributes(e)

    def live_refs_to(self, target: int) -> list[tuple[int, int, int]]:
        self.settled()
        return super().live_refs_to(target)

    def has_live_attribute(self, a: int) -> bool:
        self.settled()
        return super().has_live_attribute(a)

    def blob(self, key: bytes) -> str | bytes | None:
        found = self.overlay.blobs.get(key)
        return found if found is not None else super().blob(key)
