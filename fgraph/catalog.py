"""Indexed lookups on the identity registry, receipts and live facts.

Every read the planner and the read APIs need is one small indexed query here,
so no caller builds whole-table caches and cost stays flat as history grows.
"""

from __future__ import annotations

import apsw

from fgraph.genesis import A_AT, A_IMPORTED_AT


class Catalog:
    """Lookups over one connection; ``basis`` limits what a historical view sees."""

    def __init__(self, conn: apsw.Connection, basis: int | None = None):
        self.conn = conn
        self.basis = basis
        self._names: dict[int, str | None] = {}
        self._gids: dict[int, bytes | None] = {}

    # -- identities -------------------------------------------------------
    def id_by_name(self, name: str) -> int | None:
        row = self.conn.execute("SELECT id, created_tx FROM fgraph_ids WHERE name = ?", (name,)).fetchone()
        if row is None or (self.basis is not None and row[1] > self.basis):
            return None
        return row[0]

    def id_by_gid(self, gid: bytes) -> int | None:
        row = self.conn.execute("SELECT id, created_tx FROM fgraph_ids WHERE gid = ?", (gid,)).fetchone()
        if row is None or (self.basis is not None and row[1] > self.basis):
            return None
        return row[0]

    def identity(self, ident: int) -> tuple[str | None, bytes | None, int] | None:
        row = self.conn.execute("SELECT name, gid, created_tx FROM fgraph_ids WHERE id = ?", (ident,)).fetchone()
        if row is None or (self.basis is not None and row[2] > self.basis):
            return None
        self._names[ident], self._gids[ident] = row[0], row[1]
        return row

    def name_of(self, ident: int) -> str | None:
        if ident not in self._names:
            row = self.conn.execute("SELECT name, gid FROM fgraph_ids WHERE id = ?", (ident,)).fetchone()
            self._names[ident], self._gids[ident] = (row if row else (None, None))
        return self._names[ident]

    def gid_of(self, ident: int) -> bytes | None:
        if ident not in self._gids:
            self.name_of(ident)
        return self._gids[ident]

    def is_transaction(self, ident: int) -> bool:
        row = self.conn.execute("SELECT 1 FROM fgraph_events WHERE tx = ?", (ident,)).fetchone()
        return row is not None and (self.basis is None or ident <= self.basis)

    def next_id(self) -> int:
        return self.conn.execute("SELECT value FROM fgraph_meta WHERE key = 'next_id'").fetchone()[0]

    # -- transactions -----------------------------------------------------
    def latest_tx(self) -> int:
        if self.basis is not None:
            return self.basis
        return self.conn.execute("SELECT max(tx) FROM fgraph_events").fetchone()[0]

    def tx_before(self, tx: int) -> int:
        row = self.conn.execute("SELECT max(tx) FROM fgraph_events WHERE tx < ?", (tx,)).fetchone()
        return row[0] if row[0] is not None else tx

    def tx_at(self, tx: int) -> int | None:
        """The transaction's own fgraph/at (its self-receipt)."""
        row = self.conn.execute(
            "SELECT v FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ? AND a = ? AND tx = ?",
            (tx, A_AT, tx)).fetchone()
        return row[0] if row else None

    def imported_at(self, tx: int) -> int | None:
        row = self.conn.execute(
            "SELECT v FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ? AND a = ? AND tx = ?",
            (tx, A_IMPORTED_AT, tx)).fetchone()
        return row[0] if row else None

    def tx_for_instant(self, instant: int, basis: int | None = None) -> int | None:
        """The greatest transaction whose own fgraph/at is at or before ``instant``.

        Receipt times grow with tx ids, so the first self-receipt found walking the
        (a, t, v) index downwards from ``instant`` is the answer.
        """
        limit = basis if basis is not None else self.basis
        for (e, tx) in self.conn.execute(
                "SELECT e, tx FROM fgraph_facts WHERE a = ? AND t = 5 AND v <= ? ORDER BY v DESC",
                (A_AT, instant)):
            if e == tx and (limit is None or tx <= limit):
                return tx
        return None

    def event_row(self, tx: int):
        return self.conn.execute(
            "SELECT event_hash, event_data, operation_id, request_hash FROM fgraph_events WHERE tx = ?",
            (tx,)).fetchone()

    def operation(self, operation_id: str):
        return self.conn.execute(
            "SELECT tx, request_hash FROM fgraph_events WHERE operation_id = ?", (operation_id,)).fetchone()

    # -- facts ------------------------------------------------------------
    def live_values(self, e: int, a: int) -> list[tuple[int, object, int]]:
        """(fact id, v, t) of the live facts of (e, a), in fact-id order.

        Without statistics SQLite would pick the (a, …) index and scan every fact of
        the attribute; the live (e, a, v, t) index keeps this proportional to the answer.
        """
        return self.conn.execute(
            "SELECT id, v, t FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? AND a = ? AND rx IS NULL"
            " ORDER BY id",
            (e, a)).fetchall()

    def live_attributes(self, e: int) -> list[int]:
        return [row[0] for row in self.conn.execute(
            "SELECT DISTINCT a FROM fgraph_facts WHERE e = ? AND rx IS NULL", (e,))]

    def live_owners(self, a: int, v: object, t: int) -> list[int]:
        return [row[0] for row in self.conn.execute(
            "SELECT e FROM fgraph_facts WHERE a = ? AND t = ? AND v = ? AND rx IS NULL ORDER BY id", (a, t, v))]

    def live_refs_to(self, target: int) -> list[tuple[int, int, int]]:
        """(fact id, e, a) of live ref facts pointing at ``target``."""
        return self.conn.execute(
            "SELECT id, e, a FROM fgraph_facts WHERE v = ? AND t = 0 AND rx IS NULL ORDER BY id",
            (target,)).fetchall()

    def has_live_attribute(self, a: int) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM fgraph_facts WHERE a = ? AND rx IS NULL LIMIT 1", (a,)).fetchone() is not None

    def blob(self, key: bytes):
        row = self.conn.execute("SELECT data FROM fgraph_blobs WHERE hash = ?", (key,)).fetchone()
        return row[0] if row else None
