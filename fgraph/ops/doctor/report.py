"""The doctor report: the 13 keys of spec 06 §3, the problem records behind them, and the text a person reads."""

from __future__ import annotations

from dataclasses import dataclass, replace

from fgraph.ops.doctor.findings import Problem

REPORT_KEYS = ("expected_fts_rows", "fts_rows", "fts_rows_rebuilt", "integrity", "ok", "orphaned_blobs",
               "orphaned_blobs_removed", "problems", "repair_needed", "repaired", "schema_problems",
               "shape_violations", "unverifiable_event_hashes")

ADVICE_REPAIR = "repairable: run `fgraph --db PATH doctor --repair`"
ADVICE_RESTORE = ("not repairable in place: keep this file for analysis and restore from a verified backup "
                  "(`fgraph restore-backup BACKUP DEST`) or a snapshot")
ADVICE_DIGEST = "the file does not hold the expected state: take a new backup and compare its digest"
ADVICE_MARKER = ("the database itself is not damaged: remove that entry by hand (or move it elsewhere if it is a "
                 "file of yours: fgraph never removes what it did not write), then run "
                 "`fgraph --db PATH doctor --repair` to finish the scrub")
ADVICE_NOTE = ("the database itself is not damaged: remove that entry by hand (or move it elsewhere if it is a "
               "file of yours: fgraph never removes what it did not write), then run the same `fgraph sync` again")
#: advice for the problems whose remedy is neither a repair nor a restore
ADVICE_BY_KIND = {"digest": ADVICE_DIGEST, "scrub_marker": ADVICE_MARKER, "excision_note": ADVICE_NOTE}


@dataclass(frozen=True)
class Diagnosis:
    """One doctor run: its counters (``figures``) and its problems as records."""

    figures: dict
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def fatal(self) -> list[Problem]:
        """The problems repair cannot fix in place."""
        return [p for p in self.problems if not p.repairable]

    @property
    def report(self) -> dict:
        """The 13-key report of spec 06 §3 (``problems`` as strings), in key order."""
        report = dict(self.figures, problems=[p.message for p in self.problems], ok=self.ok,
                      repair_needed=any(p.repairable for p in self.problems))
        return {key: report[key] for key in REPORT_KEYS}

    @property
    def printed(self) -> dict:
        """The report as ``doctor --json`` prints it: the 13 keys, and ``digests`` when they were computed
        (``doctor --digests``: ``basis_tx``, ``digest``, ``content_digest``, ``content_events``)."""
        digests = self.figures.get("digests")
        return self.report if digests is None else dict(self.report, digests=digests)

    def with_problem(self, problem: Problem) -> "Diagnosis":
        return replace(self, problems=self.problems + (problem,))

    def with_figures(self, **figures) -> "Diagnosis":
        return replace(self, figures=dict(self.figures, **figures))

    def describe(self) -> str:
        """Human output: a verdict line, then one problem per line with what to do."""
        f = self.figures
        counts = (f"integrity {f['integrity']}; full-text rows {f['fts_rows']}/{f['expected_fts_rows']}; "
                  f"orphaned blobs {f['orphaned_blobs']}; schema problems {f['schema_problems']}; shape "
                  f"violations {f['shape_violations']}; redacted events {f['unverifiable_event_hashes']}")
        lines, after = [], []
        if f.get("digests") and "unavailable" in f["digests"]:
            after.append(f"digests unavailable: {f['digests']['unavailable']}")
        elif f.get("digests"):
            d = f["digests"]
            after.append(f"digests at basis tx {d['basis_tx']}: logical {d['digest']}, content {d['content_digest']} "
                         f"({d['content_events']} events)")
        if f["repaired"]:
            lines.append(f"repaired: rebuilt {f['fts_rows_rebuilt']} full-text rows, removed "
                         f"{f['orphaned_blobs_removed']} orphaned blobs")
        if self.ok:
            lines.append(f"ok: no problems found ({counts})")
            return "\n".join(lines + after)
        lines.append(f"NOT OK: {len(self.problems)} problem(s) ({counts})")
        for problem in self.problems:
            advice = ADVICE_REPAIR if problem.repairable else ADVICE_BY_KIND.get(problem.kind, ADVICE_RESTORE)
            lines.append(f"problem: {problem.message} -> {advice}")
        return "\n".join(lines + after)
