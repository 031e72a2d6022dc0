"""When a record of ``context(by="entity")`` happened (decision C4 in docs/cli.md): the window
a ``since`` time draws over the records' own times, and which imported transactions carry no
time of their own.

- **A time window** (``since`` an RFC 3339 time or a duration such as ``7d``) keeps the records
  whose *source time* falls after it: an import's ``fgraph/imported-at`` (the record's own time,
  e.g. a decision's timestamp), else the commit time. A transaction id or event UUID keeps its
  meaning, "changed after that transaction".
- **An untimed import** is a transaction an importer wrote (a name-based, version-5 event UUID)
  whose ``fgraph/imported-at`` no fact of it repeats as an instant: its records carried no time
  (an mcp-memory file), so ``imported-at`` is only the moment of the import. Its entities come
  after every dated one, so a fresh import of a memory file cannot bury dated decisions.
"""

from __future__ import annotations

from fgraph.core import timespec
from fgraph.core.values import TAG_INSTANT, parse_instant


def window(since, now) -> int | None:
    """The instant a time-like ``since`` names (``now`` a callable giving the clock, read only for
    a duration); None for a transaction id, an event UUID or no ``since``."""
    if not isinstance(since, str):
        return None
    text = since.strip()
    if not text or text.lstrip("+-").isdigit() or timespec.EVENT_UUID.fullmatch(text):
        return None
    if timespec.duration_us(text) is not None:
        return timespec.instant_before(now(), text)
    return parse_instant(text)


#: whether an ``fgraph/imported-at`` row ``imp`` of ``fgraph_facts`` is an untimed import: its
#: transaction's event UUID is name-based (version 5: hex digit 13 of the gid) and none of the
#: transaction's facts holds ``v`` as an instant (fgraph_txin finds its facts)
UNTIMED_SQL = (f"((SELECT substr(hex(gid), 13, 1) FROM fgraph_ids WHERE id = imp.e) = '5' AND NOT EXISTS "
               f"(SELECT 1 FROM fgraph_facts own WHERE own.tx = imp.e AND own.e != imp.e AND own.t = {TAG_INSTANT} "
               f"AND own.v = imp.v))")
