"""The figures of ``info`` and ``stats()`` (spec 09 §6.1), exact at the view's basis, each read
from the narrowest b-tree that answers it, since every one of them is a count over history and
the wide tables are where a large store's pages are:

- ``facts``: the asserting-transaction index (``fgraph_txin``), a range up to the basis.
- ``live_facts``: ``facts`` less the facts retracted by the basis (``fgraph_txout``). A fact is
  retracted only by a transaction after the one that asserted it (restore refuses anything
  else and doctor checks it), so every fact retracted by the basis was also asserted by it.
- ``transactions``: the events' operation-id index, which holds every transaction id without
  the payloads that fill the events table.
- ``entities``: identities created by the basis (``fgraph_ids_created``) less the transactions.
- ``attributes``: names with a slash created by the basis, checked against the attribute grammar
  (a scan of the registry: no index orders names by what follows a slash).
- ``blobs``: distinct blob keys through ``fgraph_avet``, one range per attribute in use and blob
  tag (the attributes found by skipping along the index's first column), instead of a scan of
  every fact.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fgraph.core.limits import APPLICATION_ID, USER_VERSION
from fgraph.core.names import ATTRIBUTE_RE
from fgraph.core.values import INDIRECT_TAGS

if TYPE_CHECKING:
    import apsw

_BLOB_TAGS = ", ".join(str(t) for t in sorted(INDIRECT_TAGS))
# each step is one seek: the smallest attribute id above the last one
_ATTRIBUTES_IN_USE = ("WITH RECURSIVE used(a) AS (SELECT min(a) FROM fgraph_facts INDEXED BY fgraph_avet "
                      "UNION ALL SELECT (SELECT min(a) FROM fgraph_facts INDEXED BY fgraph_avet WHERE a > used.a) "
                      "FROM used WHERE used.a IS NOT NULL) ")


def stats_at(conn: apsw.Connection, basis: int, path: str) -> dict[str, int]:
    """The nine keys of spec 09 §6.1 at ``basis``, inside the caller's read transaction."""
    def one(sql: str, *args: int) -> int:
        count: int = conn.execute(sql, args).fetchone()[0]  # type: ignore[index]  # count(*) always has a row
        return count

    facts = one("SELECT count(*) FROM fgraph_facts INDEXED BY fgraph_txin WHERE tx <= ?", basis)
    retracted = one("SELECT count(*) FROM fgraph_facts INDEXED BY fgraph_txout WHERE rx <= ?", basis)
    transactions = one("SELECT count(*) FROM fgraph_events INDEXED BY sqlite_autoindex_fgraph_events_1 "
                       "WHERE tx <= ?", basis)
    ids = one("SELECT count(*) FROM fgraph_ids INDEXED BY fgraph_ids_created WHERE created_tx <= ?", basis)
    blobs = one(f"{_ATTRIBUTES_IN_USE}SELECT count(DISTINCT v) FROM fgraph_facts INDEXED BY fgraph_avet "
                f"WHERE a IN (SELECT a FROM used) AND t IN ({_BLOB_TAGS}) AND tx <= ?", basis)
    return {
        "application_id": APPLICATION_ID, "format_version": USER_VERSION,
        "attributes": _attributes(conn, basis),
        "blobs": blobs,
        "entities": ids - transactions,
        "facts": facts,
        "live_facts": facts - retracted,
        "size": os.path.getsize(path) if path != ":memory:" and os.path.exists(path) else 0,
        "transactions": transactions,
    }


def _attributes(conn: apsw.Connection, basis: int) -> int:
    # a scan of the registry's names either way: its name index is no narrower than its rows
    rows = conn.execute("SELECT name FROM fgraph_ids WHERE created_tx <= ? AND name GLOB '*/*'", (basis,))
    return sum(1 for (name,) in rows if ATTRIBUTE_RE.match(name))
