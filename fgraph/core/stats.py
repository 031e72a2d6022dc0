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

Each count is also a sum over transactions (``counts_between``), so ``fgraph.core.stats_cache``
keeps them beside the database at one basis and adds what the transactions since then changed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fgraph.core.limits import APPLICATION_ID, USER_VERSION
from fgraph.core.names import ATTRIBUTE_RE
from fgraph.core.stats_cache import counts_at
from fgraph.core.values import INDIRECT_TAGS

if TYPE_CHECKING:
    import apsw

_BLOB_TAGS = ", ".join(str(t) for t in sorted(INDIRECT_TAGS))
# each step is one seek: the smallest attribute id above the last one
_ATTRIBUTES_IN_USE = ("WITH RECURSIVE used(a) AS (SELECT min(a) FROM fgraph_facts INDEXED BY fgraph_avet "
                      "UNION ALL SELECT (SELECT min(a) FROM fgraph_facts INDEXED BY fgraph_avet WHERE a > used.a) "
                      "FROM used WHERE used.a IS NOT NULL) ")


def stats_at(conn: apsw.Connection, basis: int, path: str) -> dict[str, int]:
    """The nine keys of spec 09 §6.1 at ``basis``, inside the caller's read transaction; the
    counts come through the cache beside the database (``fgraph.core.stats_cache``) when it
    covers this history, else from the indexes."""
    counts = counts_at(conn, basis, lambda: counts_between(conn, None, basis),
                       lambda since, upto: counts_between(conn, since, upto))
    return {
        "application_id": APPLICATION_ID, "format_version": USER_VERSION,
        "attributes": counts["attributes"],
        "blobs": counts["blobs"],
        "entities": counts["ids"] - counts["transactions"],
        "facts": counts["facts"],
        "live_facts": counts["facts"] - counts["retracted"],
        "size": os.path.getsize(path) if path != ":memory:" and os.path.exists(path) else 0,
        "transactions": counts["transactions"],
    }


def counts_between(conn: apsw.Connection, since: int | None, basis: int) -> dict[str, int]:
    """The counts of what transactions ``(since, basis]`` added (all of history up to ``basis``
    when ``since`` is None): facts asserted, facts retracted, transactions, identities created,
    attribute names created, and blob values first used."""
    def one(sql: str, *args: int) -> int:
        count: int = conn.execute(sql, args).fetchone()[0]  # type: ignore[index]  # count(*) always has a row
        return count

    low = -1 if since is None else since
    facts = one("SELECT count(*) FROM fgraph_facts INDEXED BY fgraph_txin WHERE tx > ? AND tx <= ?", low, basis)
    retracted = one("SELECT count(*) FROM fgraph_facts INDEXED BY fgraph_txout WHERE rx > ? AND rx <= ?", low, basis)
    # from the start, the operation-id index holds every tx without the payloads; a range, the table's own key
    events = "fgraph_events INDEXED BY sqlite_autoindex_fgraph_events_1" if since is None else "fgraph_events"
    transactions = one(f"SELECT count(*) FROM {events} WHERE tx > ? AND tx <= ?", low, basis)
    ids = one("SELECT count(*) FROM fgraph_ids INDEXED BY fgraph_ids_created WHERE created_tx > ? AND created_tx <= ?",
              low, basis)
    if since is None:
        blobs = one(f"{_ATTRIBUTES_IN_USE}SELECT count(DISTINCT v) FROM fgraph_facts INDEXED BY fgraph_avet "
                    f"WHERE a IN (SELECT a FROM used) AND t IN ({_BLOB_TAGS}) AND tx <= ?", basis)
    else:   # the blob values of the new facts that no fact up to ``since`` holds
        blobs = one(f"{_ATTRIBUTES_IN_USE}SELECT count(*) FROM (SELECT DISTINCT v FROM fgraph_facts INDEXED BY "
                    f"fgraph_txin WHERE tx > ? AND tx <= ? AND t IN ({_BLOB_TAGS})) AS new WHERE NOT EXISTS "
                    "(SELECT 1 FROM fgraph_facts AS old INDEXED BY fgraph_avet WHERE old.a IN (SELECT a FROM used) "
                    f"AND old.t IN ({_BLOB_TAGS}) AND old.v = new.v AND old.tx <= ?)", since, basis, since)
    return {"attributes": _attributes(conn, low, basis), "blobs": blobs, "facts": facts, "ids": ids,
            "retracted": retracted, "transactions": transactions}


def _attributes(conn: apsw.Connection, since: int, basis: int) -> int:
    # a scan of the registry's names when counting from the start: its name index is no narrower than its rows
    index = "NOT INDEXED" if since < 0 else "INDEXED BY fgraph_ids_created"
    rows = conn.execute(f"SELECT name FROM fgraph_ids {index} WHERE created_tx > ? AND created_tx <= ? "
                        "AND name GLOB '*/*'", (since, basis))
    return sum(1 for (name,) in rows if ATTRIBUTE_RE.match(name))
