"""The read-only SQL of ``fgraph browse``'s pages for people (issue 31 item 1, docs/browse.md
decision B2): what the landing page, the entity card, the attribute list and the lists of what
refers to an entity and of an entity's transactions read.

Like ``fgraph.query.browse.sql``, whose entity selector (``:entity``) and column contract these
reuse, the statements are plain SQLite 3.37+ SQL that Datasette runs on its own bounded read-only
connections (``connect_read_only`` there), so every limit of docs/browse.md §Limits holds for
them too. Canned queries take their parameters as text; ``RECENT`` and ``ENTITY_CARD`` are run by
the pages plugin (``fgraph.bridges.browse.pages``) with the values it passes.
"""

from __future__ import annotations

from fgraph.core.genesis import A_AT, A_BY, A_DOC, A_MANY, A_SOURCE, A_TYPE, A_UNIQUE
from fgraph.core.limits import FIRST_APP_ID, GENESIS_TX
from fgraph.core.values import TAG_REF
from fgraph.query.browse.sql import PAGE_SIZE, TARGET, is_attribute, self_fact, uuid_text

RECENT_SIZE = 15        # transactions the landing page lists, newest first
RECENT_NAMED = 4        # entities named per listed transaction ("and N more" for the rest)
INCOMING_SHOWN = 25     # referrers the entity page lists before it links to the full list

# Column names the pages plugin gives a meaning, beside those of fgraph.query.browse.sql.
ID_COLUMNS = frozenset({"event", "uuid"})          # UUIDs: monospace, on one line
HASH_COLUMNS = frozenset({"event_hash"})           # hex digests: monospace, broken anywhere


def _declared(attribute: int, e: str) -> str:
    """The live value of system attribute ``attribute`` of identity ``e`` (its newest, if several)."""
    return (f"(SELECT d.v FROM fgraph_facts d INDEXED BY fgraph_hist WHERE d.e = {e} AND d.a = {attribute} "
            f"AND d.rx IS NULL ORDER BY d.id DESC LIMIT 1)")


ATTRIBUTES = f"""SELECT i.name AS attribute, {_declared(A_TYPE, 'i.id')} AS type,
       CASE WHEN {_declared(A_MANY, 'i.id')} = 1 THEN 'many' ELSE 'one' END AS cardinality,
       CASE WHEN {_declared(A_UNIQUE, 'i.id')} = 1 THEN 'unique' ELSE '' END AS "unique",
       (SELECT count(*) FROM fgraph_facts f INDEXED BY fgraph_avet WHERE f.a = i.id AND f.rx IS NULL) AS live_facts,
       {_declared(A_DOC, 'i.id')} AS doc, i.created_tx
  FROM fgraph_ids i
 WHERE i.id >= {FIRST_APP_ID} AND i.name IS NOT NULL AND {is_attribute('i.id')}
   AND (:after = '' OR i.name > :after)
 ORDER BY i.name
 LIMIT {PAGE_SIZE}"""
# Declared and undeclared attributes alike (sql.is_attribute); the type is the declared one, if any.

INCOMING = f"""WITH {TARGET}
SELECT a.name AS attribute, f.e AS entity, f.tx AS asserted_tx
  FROM fgraph_facts f INDEXED BY fgraph_vaet JOIN fgraph_ids a ON a.id = f.a
 WHERE f.v = +(SELECT id FROM chosen) AND f.t = {TAG_REF} AND f.rx IS NULL
 ORDER BY a.name, f.e
 LIMIT {PAGE_SIZE}"""
# The live refs to the entity, from the VAET index (live refs only) as Db.incoming reads them: the first
# PAGE_SIZE, by attribute name, then entity id. The unary + drops the subquery's affinity, so the
# comparison with the untyped v searches the index instead of scanning it.

RECEIPTS = f"""WITH {TARGET},
touched(tx) AS (
  SELECT tx FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = (SELECT id FROM chosen)
  UNION
  SELECT rx FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = (SELECT id FROM chosen) AND rx IS NOT NULL
)
SELECT t.tx, {self_fact(A_AT, 't.tx')} AS at, {self_fact(A_BY, 't.tx')} AS by,
       {self_fact(A_SOURCE, 't.tx')} AS source,
       (SELECT count(*) FROM fgraph_facts a WHERE a.tx = t.tx AND a.e = (SELECT id FROM chosen)) AS asserted,
       (SELECT count(*) FROM fgraph_facts r WHERE r.rx = t.tx AND r.e = (SELECT id FROM chosen)) AS retracted
  FROM touched t
 WHERE t.tx <> (SELECT id FROM chosen)
 ORDER BY t.tx DESC
 LIMIT {PAGE_SIZE}"""
# The counts are this entity's facts; their links show all the transaction changed.

ENTITY_CARD = f"""WITH {TARGET}
SELECT i.id, i.name, {uuid_text('i.gid')} AS uuid, i.created_tx,
       {is_attribute('i.id')} AS is_attribute,
       EXISTS (SELECT 1 FROM fgraph_events ev WHERE ev.tx = i.id) AS is_transaction,
       (SELECT count(*) FROM fgraph_facts f INDEXED BY fgraph_hist WHERE f.e = i.id AND f.rx IS NULL) AS live_facts
  FROM fgraph_ids i
 WHERE i.id = (SELECT id FROM chosen)"""

RECENT = f"""SELECT ev.tx, {self_fact(A_AT, 'ev.tx')} AS at, {self_fact(A_BY, 'ev.tx')} AS by,
       {self_fact(A_SOURCE, 'ev.tx')} AS source,
       (SELECT count(*) FROM fgraph_facts a WHERE a.tx = ev.tx AND a.e <> ev.tx) AS asserted,
       (SELECT count(*) FROM fgraph_facts r WHERE r.rx = ev.tx) AS retracted,
       (SELECT group_concat(e) FROM (
          SELECT c.e FROM (SELECT a.e, a.id FROM fgraph_facts a WHERE a.tx = ev.tx AND a.e <> ev.tx
                           UNION ALL SELECT r.e, r.id FROM fgraph_facts r WHERE r.rx = ev.tx) c
           GROUP BY c.e ORDER BY {is_attribute('c.e')}, min(c.id)
           LIMIT {RECENT_NAMED + 1})) AS entities
  FROM fgraph_events ev
 WHERE ev.tx > {GENESIS_TX}
 ORDER BY ev.tx DESC
 LIMIT {RECENT_SIZE}"""
# ``entities``: the ids of up to RECENT_NAMED + 1 entities it changed, comma-separated, the
# attributes it declared or used after the others (a person looks for the records); one more
# than are named tells the page there are others ("and more"), without counting them all.
