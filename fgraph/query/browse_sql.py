"""The read-only SQL behind ``fgraph browse`` (issue 16): Datasette's canned queries over a
format-v2 file (spec 01 §5–§6), the one identity lookup its cell renderer needs, and the
read-only connection Datasette reads through.

The face (``fgraph.bridges.browse``) holds no SQL; it hands these strings to Datasette, which
runs them with its own ``sqlite3`` connections, so they are plain SQLite 3.37+ SQL (no
``unhex``) with Datasette's ``:named`` parameters. Datasette passes every parameter as text
(an empty string when the form field is blank), hence the ``CAST``s and the ``= ''`` tests.

The column names are part of the contract with the renderer: ``value`` is rendered by the
``tag`` beside it, instants, transactions and entities by the sets below.
"""

from __future__ import annotations

import sqlite3
import uuid

from fgraph.core.connection import read_only_uri  # the one statement of the read-only open rule
from fgraph.core.genesis import A_AT, A_BY, A_IMPORTED_AT, A_META, A_SOURCE
from fgraph.core.limits import FIRST_APP_ID, GENESIS_TX

PAGE_SIZE = 100   # rows per page of the event stream and of the entity list; page on with since/after

# Column names the renderer gives a meaning (fgraph.bridges.browse).
VALUE_COLUMN, TAG_COLUMN = "value", "tag"
INSTANT_COLUMNS = frozenset({"at", "asserted_at", "retracted_at", "imported_at"})
TX_COLUMNS = frozenset({"tx", "rx", "asserted_tx", "retracted_tx", "created_tx"})
ENTITY_COLUMNS = frozenset({"entity"})            # identity ids, shown as their name or UUID
ATTRIBUTE_COLUMNS = frozenset({"attribute"})      # attribute names (attributes are entities too)
CHANGE_COUNT_COLUMNS = frozenset({"asserted", "retracted"})  # counts of a receipt, beside its tx
JSON_COLUMNS = frozenset({"meta", "event_data"})

# The identity :entity names: digits are an id (as the CLI reads REF), else a name, else the
# UUID of an anonymous identity. The branches are tried in that order; the first row wins.
_TARGET = """target(id) AS (
  SELECT id FROM fgraph_ids
   WHERE :entity <> '' AND :entity NOT GLOB '*[^0-9]*' AND id = CAST(:entity AS INTEGER)
  UNION ALL
  SELECT id FROM fgraph_ids WHERE name = :entity
  UNION ALL
  SELECT id FROM fgraph_ids WHERE gid = fgraph_uuid_bytes(:entity)
), chosen(id) AS (SELECT id FROM target LIMIT 1)"""


def _self_fact(attribute: int, tx: str) -> str:
    """The value of one of transaction ``tx``'s own facts (fgraph/at, by, source, meta)."""
    return (f"(SELECT r.v FROM fgraph_facts r INDEXED BY fgraph_hist "
            f"WHERE r.e = {tx} AND r.a = {attribute} AND r.tx = {tx})")


def _uuid(gid: str) -> str:
    """16 UUID bytes as lowercase hyphenated text; NULL for a named identity."""
    hexed = f"lower(hex({gid}))"
    return (f"CASE WHEN {gid} IS NULL THEN NULL ELSE substr({hexed}, 1, 8) || '-' || substr({hexed}, 9, 4) || '-' || "
            f"substr({hexed}, 13, 4) || '-' || substr({hexed}, 17, 4) || '-' || substr({hexed}, 21, 12) END")


ENTITY = f"""WITH {_TARGET}
SELECT f.attribute, f.value, f.tag, f.tx AS asserted_tx, {_self_fact(A_AT, 'f.tx')} AS asserted_at
  FROM fgraph_now f
 WHERE f.e = (SELECT id FROM chosen)
 ORDER BY f.attribute, f.id"""

HISTORY = f"""WITH {_TARGET},
changes(tx, change, fact) AS (
  SELECT tx, 'asserted', id FROM fgraph_facts WHERE e = (SELECT id FROM chosen)
  UNION ALL
  SELECT rx, 'retracted', id FROM fgraph_facts WHERE e = (SELECT id FROM chosen) AND rx IS NOT NULL
)
SELECT c.tx, {_self_fact(A_AT, 'c.tx')} AS at, c.change, v.attribute, v.value, v.tag
  FROM changes c JOIN fgraph_view v ON v.id = c.fact
 WHERE :attribute = '' OR v.attribute = :attribute
 ORDER BY c.tx, c.change DESC, c.fact"""
# Within one transaction the retraction is listed before the assertion that replaced it.

RECEIPT = f"""SELECT ev.tx, {_uuid('t.gid')} AS event, {_self_fact(A_AT, 'ev.tx')} AS at,
       {_self_fact(A_BY, 'ev.tx')} AS by, {_self_fact(A_SOURCE, 'ev.tx')} AS source,
       {_self_fact(A_META, 'ev.tx')} AS meta, {_self_fact(A_IMPORTED_AT, 'ev.tx')} AS imported_at,
       (SELECT count(*) FROM fgraph_facts a WHERE a.tx = ev.tx AND a.e <> ev.tx) AS asserted,
       (SELECT count(*) FROM fgraph_facts r WHERE r.rx = ev.tx) AS retracted,
       ev.operation_id, lower(hex(ev.event_hash)) AS event_hash, ev.event_data
  FROM fgraph_events ev JOIN fgraph_ids t ON t.id = ev.tx
 WHERE ev.tx = CAST(:tx AS INTEGER)"""
# ``asserted`` leaves out the transaction's own facts (at, by, source, meta), as event/1 does.

CHANGES = """SELECT f.e AS entity, 'asserted' AS change, f.attribute, f.value, f.tag
  FROM fgraph_view f WHERE f.tx = CAST(:tx AS INTEGER) AND f.e <> f.tx
UNION ALL
SELECT f.e, 'retracted', f.attribute, f.value, f.tag
  FROM fgraph_view f WHERE f.rx = CAST(:tx AS INTEGER)
 ORDER BY change DESC, entity, attribute"""

EVENTS = f"""SELECT ev.tx, {_uuid('t.gid')} AS event, {_self_fact(A_AT, 'ev.tx')} AS at,
       lower(hex(ev.event_hash)) AS event_hash, ev.operation_id, ev.event_data
  FROM fgraph_events ev JOIN fgraph_ids t ON t.id = ev.tx
 WHERE ev.tx > max({GENESIS_TX}, CAST(:since AS INTEGER))
 ORDER BY ev.tx
 LIMIT {PAGE_SIZE}"""
# Genesis is never part of the stream (as with ``fgraph tail``); a blank ``since`` starts there.

ENTITIES = f"""SELECT i.id, i.id AS entity, i.created_tx,
       (SELECT count(*) FROM fgraph_facts f WHERE f.e = i.id AND f.rx IS NULL) AS live_facts
  FROM fgraph_ids i
 WHERE i.id > max({FIRST_APP_ID - 1}, CAST(:after AS INTEGER))
   AND NOT EXISTS (SELECT 1 FROM fgraph_events ev WHERE ev.tx = i.id)
 ORDER BY i.id
 LIMIT {PAGE_SIZE}"""
# Transactions are identities too; they have their own pages (receipt, changes), not this list.

IDENTITY_LABEL = "SELECT name, lower(hex(gid)) FROM fgraph_ids WHERE id = ?"


def _uuid_bytes(text) -> bytes | None:
    """A UUID typed by the user (any case, hyphens optional) as the 16 bytes of ``fgraph_ids.gid``;
    SQLite 3.40, which Python may bring, has no ``unhex`` to do it in SQL over the index."""
    if not isinstance(text, str):
        return None
    try:
        return uuid.UUID(text).bytes
    except ValueError:
        return None


def connect_read_only(path: str) -> sqlite3.Connection:
    """A ``sqlite3`` connection Datasette can use that SQLite itself keeps from writing.

    ``mode=ro`` reads committed transactions still in the WAL; ``immutable=1`` would ignore
    them, so it is added only where fgraph's own read-only open adds it (a read-only
    directory without sidecars, where no writer can exist). ``query_only`` refuses writes
    even on a connection Datasette asks for as its "write" connection.
    """
    conn = sqlite3.connect(read_only_uri(path), uri=True, check_same_thread=False)
    conn.create_function("fgraph_uuid_bytes", 1, _uuid_bytes, deterministic=True)
    conn.execute("PRAGMA query_only = ON")
    conn.execute("PRAGMA trusted_schema = OFF")
    return conn
