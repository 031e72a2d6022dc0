"""The digests ``doctor --digests`` prints beside its report (issue 48 item 6): the logical digest
(``info --digest``, the snapshot/1 footer) and the content digest (``info --content-digest``,
``fgraph.streams.content_digest``), both at one basis read in one transaction, so an operator
compares two copies with one command: equal content digests, same knowledge."""

from __future__ import annotations

import apsw

from fgraph.core.errors import FgraphError
from fgraph.core.limits import GENESIS_TX
from fgraph.core.txn import read_transaction
from fgraph.streams.content_digest import content_digest
from fgraph.streams.snapshot import logical_digest


def computed(conn: apsw.Connection, basis: int | None = None) -> dict:
    """``{"basis_tx", "content_digest", "content_events", "digest"}`` at ``basis`` (the latest when None);
    on a file too damaged to read them, ``{"basis_tx", "unavailable": why}`` (the report says what is wrong)."""
    try:
        with read_transaction(conn):
            if basis is None:
                basis = conn.execute("SELECT coalesce(max(tx), ?) FROM fgraph_events", (GENESIS_TX,)).fetchone()[0]
            return dict(content_digest(conn, basis), digest=logical_digest(conn, basis))
    except (FgraphError, apsw.Error, UnicodeDecodeError) as exc:
        return {"basis_tx": basis, "unavailable": str(exc)}
