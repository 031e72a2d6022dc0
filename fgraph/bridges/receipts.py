"""An excision's receipt as the faces show it by default: what was erased, counted by attribute,
and which events were redacted, never an erased value (issue 47 item 5, decision F6 in
docs/forgetting.md).

The published receipt of ``excise`` lists every deleted fact with its value, and whatever prints it
to a terminal, a log or an agent's transcript keeps the very values the excision erased. ``Db.excise``
still returns it (the published library API); ``fgraph excise`` and the MCP ``excise`` tool print it
only when asked (``--published-receipt``, ``published_receipt=true``) and this summary otherwise.
"""

from __future__ import annotations

from collections import Counter

from fgraph.core.canonical import loads
from fgraph.core.mappings import plain

#: the keys of the published receipt kept as they are: none of them holds an erased value
KEPT = ("asserted", "at", "basis_tx", "event", "ids", "reached", "further", "scrub", "status", "tx")


def redacted(db, report, *, events: bool = True) -> dict:
    """``report`` (an excision's published receipt, with our ``scrub`` and ``reached``) without a
    value: ``erased`` says how many facts were deleted, of which attributes (an attribute whose
    name was erased by its id), and lists the events redacted (from the excision event itself, as
    ``tail`` shows it; only their number without ``events``, for a reader with a size cap)."""
    out = {key: plain(report[key]) for key in KEPT if key in report}
    attributes = Counter(str(fact["a"]) for fact in report.get("retracted", ()))
    redacts = _redacts(db, report["tx"])
    out["erased"] = {"attributes": [{"attribute": a, "facts": n} for a, n in sorted(attributes.items())],
                     "facts": sum(attributes.values()), "redacted_events": redacts if events else len(redacts)}
    return out


def _redacts(db, tx: int) -> list:
    """The events the excision at ``tx`` redacted, as its event lists them."""
    for line in db.iter_events(tx - 1, tx):
        document = loads(line)
        return list(document.get("redacts", ()))
    return []
