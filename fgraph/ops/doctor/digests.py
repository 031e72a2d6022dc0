"""The digests ``doctor --digests`` prints beside its report (issue 48 item 6): the logical digest
(``info --digest``, the snapshot/1 footer) and the content digest (``info --content-digest``,
``fgraph.streams.content_digest``), both at one basis read in one transaction, so an operator
compares two copies with one command: equal content digests, same knowledge."""

from __future__ import annotations

import apsw

from fgraph.core.errors import FgraphError
from fgraph.streams.content_digest import digests_at


def computed(conn: apsw.Connection) -> dict:
    """``{"basis_tx", "content_digest", "content_events", "digest"}`` at the latest transaction; on a file
    too damaged to read them, ``{"unavailable": why}`` (the report beside them says what is wrong)."""
    try:
        return digests_at(conn)
    except (FgraphError, apsw.Error, UnicodeDecodeError) as exc:
        return {"unavailable": str(exc)}
