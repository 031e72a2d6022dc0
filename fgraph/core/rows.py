"""The one writer: every insert, update and delete of fgraph's own rows goes through here.

Facts (with their FTS rows and indirect blobs), identities, events, ``fgraph_meta`` and
FTS maintenance — for transactions, applied events, restored snapshots, excisions,
undo, nohistory, genesis and doctor's repairs alike. Callers decide *what* to write
and hold the write transaction (``fgraph.core.txn``); this module knows *how* the
rows of format v2 (spec 01 §4–§9, 02 §2) are written, so the same row is never
written two ways.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import apsw

from fgraph.core.hashing import sha256
from fgraph.core.values import INDIRECT_TAGS, TAG_LONG_TEXT, TAG_TEXT

if TYPE_CHECKING:
    from fgraph.core.types import SQLValue

FTS_TAGS = (TAG_TEXT, TAG_LONG_TEXT)
_INDIRECT_LIST = ", ".join(str(t) for t in INDIRECT_TAGS)
# No index leads with v for indirect tags; seek (a, t, v) over the attribute names instead.
_FREE_BLOB = ("DELETE FROM fgraph_blobs WHERE hash = ? AND NOT EXISTS (SELECT 1 FROM fgraph_facts "
              f"WHERE a IN (SELECT id FROM fgraph_ids WHERE name GLOB '*/*') AND t IN ({_INDIRECT_LIST}) AND v = ?)")


def event_hash(text: str) -> bytes:
    """SHA-256 of an event payload's UTF-8 bytes (04 §1)."""
    return sha256(text.encode("utf-8")).digest()


class Rows:
    """The writer for one connection inside an open write transaction."""

    __slots__ = ("conn",)

    def __init__(self, conn: apsw.Connection):
        self.conn = conn

    # -- facts -------------------------------------------------------------------
    def take_write_lock(self) -> None:
        """Take the database's write lock inside an open transaction, as BEGIN IMMEDIATE would
        (a speculation's writes run in savepoints): a no-op update that the block rolls back."""
        self.conn.execute("UPDATE fgraph_meta SET value = value WHERE key = 'next_id'")

    def fact(self, e: int, a: int, v: Any, t: int, blob: str | bytes | None, tx: int, rx: int | None = None) -> int:
        """Insert one fact row (and its blob and FTS row); returns the fact id. (``v`` is the column
        value, of the type its tag ``t`` says; ``blob`` is the text or bytes of an indirect value.)"""
        conn = self.conn
        if blob is not None and t in INDIRECT_TAGS:
            conn.execute("INSERT OR IGNORE INTO fgraph_blobs (hash, data) VALUES (?, ?)", (v, blob))
        conn.execute("INSERT INTO fgraph_facts (e, a, v, t, tx, rx) VALUES (?, ?, ?, ?, ?, ?)", (e, a, v, t, tx, rx))
        fact_id = conn.last_insert_rowid()
        if rx is None and t in FTS_TAGS:
            conn.execute("INSERT INTO fgraph_fts (rowid, text) VALUES (?, ?)",
                         (fact_id, v if t == TAG_TEXT else blob))
        return fact_id

    def retract(self, fact_id: int, v: Any, t: int, tx: int, *, delete: bool) -> bytes | None:
        """End one live fact at ``tx`` — or delete it (nohistory, 07 §1). Returns the blob key
        the row no longer holds, for ``free_blobs``."""
        conn = self.conn
        if delete:
            conn.execute("DELETE FROM fgraph_facts WHERE id = ?", (fact_id,))
        else:
            conn.execute("UPDATE fgraph_facts SET rx = ? WHERE id = ?", (tx, fact_id))
        if t in FTS_TAGS:
            conn.execute("DELETE FROM fgraph_fts WHERE rowid = ?", (fact_id,))
        return v if delete and t in INDIRECT_TAGS else None

    def delete_facts(self, rows: Iterable[tuple[int, Any, int]]) -> set[bytes | None]:
        """Delete fact rows ``(id, v, t)`` outright (excise); returns the blob keys they held."""
        freed: set[bytes | None] = set()
        for fact_id, v, t in rows:
            freed.add(self.retract(fact_id, v, t, 0, delete=True))
        freed.discard(None)
        return freed

    def free_blobs(self, keys: Iterable[bytes | None]) -> None:
        """Drop the blobs among ``keys`` that no fact row refers to any more."""
        for key in keys:
            self.conn.execute(_FREE_BLOB, (key, key))

    # -- many rows at once (a bulk apply's flush) ----------------------------------------
    def facts_with_ids(self, rows: Iterable[tuple[SQLValue, ...]]) -> None:
        """Insert ``(id, e, a, v, t, tx, rx)`` fact rows whose ids the caller allocated in
        AUTOINCREMENT order (no FTS rows, no blobs: see ``index_facts`` and ``blobs``)."""
        self.conn.executemany("INSERT INTO fgraph_facts (id, e, a, v, t, tx, rx) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def blobs(self, rows: Iterable[tuple[bytes, str | bytes]]) -> None:
        """Store ``(hash, data)`` blobs that are not stored yet."""
        self.conn.executemany("INSERT OR IGNORE INTO fgraph_blobs (hash, data) VALUES (?, ?)", rows)

    def index_facts(self, rows: Iterable[tuple[int, str]]) -> None:
        """Add the FTS rows ``(fact id, text)`` of live text facts."""
        self.conn.executemany("INSERT INTO fgraph_fts (rowid, text) VALUES (?, ?)", rows)

    def unindex_facts(self, fact_ids: Iterable[int]) -> None:
        self.conn.executemany("DELETE FROM fgraph_fts WHERE rowid = ?", ((i,) for i in fact_ids))

    def end_facts(self, rows: Iterable[tuple[int, int]]) -> None:
        """Set ``rx`` on ``(rx, fact id)`` rows."""
        self.conn.executemany("UPDATE fgraph_facts SET rx = ? WHERE id = ?", rows)

    def drop_facts(self, fact_ids: Iterable[int]) -> None:
        """Delete fact rows by id (nohistory retractions), without touching FTS or blobs."""
        self.conn.executemany("DELETE FROM fgraph_facts WHERE id = ?", ((i,) for i in fact_ids))

    def events(self, rows: Iterable[tuple[SQLValue, ...]]) -> None:
        """Insert ``(tx, hash, payload, operation_id, request_hash)`` event rows."""
        self.conn.executemany("INSERT INTO fgraph_events (tx, event_hash, event_data, operation_id, request_hash) "
                              "VALUES (?, ?, ?, ?, ?)", rows)

    # -- identities, events, meta ---------------------------------------------------
    def identities(self, rows: Iterable[tuple[int, str | None, bytes | None, int]]) -> None:
        """Register ``(id, name, gid, created_tx)`` rows; a taken gid raises apsw.ConstraintError."""
        self.conn.executemany("INSERT INTO fgraph_ids (id, name, gid, created_tx) VALUES (?, ?, ?, ?)", rows)

    def unname(self, ident: int, gid: bytes) -> None:
        """An identity keeps its id but loses its name, taking the anonymous ``gid`` it would have
        had (``excise --erase-name``, decision F5 in docs/forgetting.md)."""
        self.conn.execute("UPDATE fgraph_ids SET name = NULL, gid = ? WHERE id = ?", (gid, ident))

    def event(self, tx: int, text: str | None, digest: bytes, operation_id: str | None = None,
              request_hash: bytes | None = None) -> None:
        self.conn.execute("INSERT INTO fgraph_events (tx, event_hash, event_data, operation_id, request_hash) "
                          "VALUES (?, ?, ?, ?, ?)", (tx, digest, text, operation_id, request_hash))

    def redact_events(self, txs: Iterable[int]) -> None:
        """Drop the payloads of these events, keeping their hashes (07 §2)."""
        self.conn.executemany("UPDATE fgraph_events SET event_data = NULL WHERE tx = ?", [(t,) for t in txs])

    def next_id(self, value: int) -> None:
        self.conn.execute("UPDATE fgraph_meta SET value = ? WHERE key = 'next_id'", (value,))

    def genesis_meta(self, next_id: int, created_at: int) -> None:
        self.conn.execute("INSERT INTO fgraph_meta (key, value) VALUES ('next_id', ?), ('created_at', ?)",
                          (next_id, created_at))

    def genesis_time(self, created_at: int, genesis_at_fact: int, genesis_tx: int, event_text: str) -> None:
        """Move genesis to another creation time (restore, 05 §2.3)."""
        conn = self.conn
        conn.execute("UPDATE fgraph_meta SET value = ? WHERE key = 'created_at'", (created_at,))
        conn.execute("UPDATE fgraph_facts SET v = ? WHERE id = ?", (created_at, genesis_at_fact))
        conn.execute("UPDATE fgraph_events SET event_data = ?, event_hash = ? WHERE tx = ?",
                     (event_text, event_hash(event_text), genesis_tx))

    # -- full-text index maintenance ----------------------------------------------------
    def index_texts(self, select_rowid_text: str, params: tuple[SQLValue, ...] = ()) -> None:
        """Add FTS rows for ``SELECT rowid, text …`` (genesis, doctor's rebuild)."""
        self.conn.execute(f"INSERT INTO fgraph_fts (rowid, text) {select_rowid_text}", params)

    def clear_fts(self) -> None:
        self.conn.execute("DELETE FROM fgraph_fts")

    def optimize_fts(self) -> None:
        """Merge FTS segments, so deleted terms leave the index's pages (scrub, 07 §2)."""
        self.conn.execute("INSERT INTO fgraph_fts (fgraph_fts) VALUES ('optimize')")

    def delete_blobs_where(self, condition: str) -> None:
        """Doctor's repair: drop blobs matching an orphan filter over ``fgraph_blobs``."""
        self.conn.execute(f"DELETE FROM fgraph_blobs WHERE {condition}")
