"""What doctor found: problems as records, so nothing downstream reads their wording.

A ``Problem`` has a stable ``kind`` (what part of the format is broken), the ``message`` a
person reads (it is also the report's ``problems`` string, spec 06 §3), and ``repairable``:
whether ``doctor --repair`` can fix it in place. Repair, the CLI's advice and the report's
``repair_needed`` all decide from ``repairable`` and ``kind``.

Kinds: ``integrity`` (SQLite's own check), ``layout`` (markers, tables, indexes),
``unreadable`` (checks stopped on a read error), ``registry`` (identity rows, fgraph_meta,
allocator), ``facts`` (fact rows: ids, intervals, tags, physical values, attributes),
``blobs``, ``events`` (payloads, hashes, redactions, created lists), ``genesis``,
``schema``, ``shapes``, ``agreement`` (facts against their events), ``digest``, and the
repairable ``fts``, ``orphaned_blobs`` and ``scrub_pending``; ``excision_owed`` (repairable once
carried out, when only its scrub is left) and ``excision_note`` come from an excision another
store sent (ops.propagate).
"""

from __future__ import annotations

from dataclasses import dataclass

# Per-event problems could run to millions on a damaged file; each group lists this many.
MAX_LINES = 20


@dataclass(frozen=True)
class Problem:
    """One finding: its kind, the sentence a person reads, and whether repair fixes it in place."""

    kind: str
    message: str
    repairable: bool = False
    detail: dict | None = None  # data for callers that act on a finding (restore's first disagreeing fact)


class Findings:
    """Problems in the order they were found; per-event groups capped at ``MAX_LINES`` lines each."""

    def __init__(self):
        self.problems: list[Problem] = []
        self._groups: dict[str, list] = {}

    def add(self, kind: str, message: str, *, repairable: bool = False, first: bool = False,
            detail: dict | None = None) -> None:
        problem = Problem(kind, message, repairable, detail)
        if first:
            self.problems.insert(0, problem)
        else:
            self.problems.append(problem)

    def count(self, kind: str, label: str, n) -> None:
        """A counted class of damage: ``"label: n"`` when ``n`` is not zero."""
        if n:
            self.add(kind, f"{label}: {int(n)}")

    def line(self, kind: str, group: str, text: str) -> None:
        """One problem of a per-event ``group``; past ``MAX_LINES``, only counted."""
        entry = self._groups.setdefault(group, [kind, 0])
        entry[1] += 1
        if entry[1] <= MAX_LINES:
            self.add(kind, text)

    def close(self) -> None:
        """Say how many lines of each capped group were left out."""
        for group, (kind, seen) in self._groups.items():
            if seen > MAX_LINES:
                self.add(kind, f"{group}: {seen - MAX_LINES} more not listed")
        self._groups.clear()
