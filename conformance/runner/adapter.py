"""The interface every runtime driver implements, and what the drivers share about step values."""

from __future__ import annotations

from typing import Any

from .cases import EXCISE_EXTRA_KEYS


class Adapter:
    """Interface of a runtime driver. ``ctx`` is the adapter's notion of a view."""

    label = "adapter"

    def check_case(self, case: dict[str, Any]) -> None:
        """Raise CaseSkipped when the whole case is out of reach (before starting)."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def root(self) -> Any:
        raise NotImplementedError

    def view(self, ctx: Any, value: Any, step: dict[str, Any]) -> Any:
        raise NotImplementedError

    def perform(self, ctx: Any, action: str, step: dict[str, Any]) -> Any:
        raise NotImplementedError

    def normalize(self, action: str, expected: Any, actual: Any) -> tuple[Any, Any]:
        return expected, actual


def ref_args(value: Any) -> list[Any]:
    """``history``/``why`` value: a selector or ``[selector, attr]``."""
    return list(value) if isinstance(value, list) else [value]


def facts_rows(connection: Any) -> list[list[Any]]:
    """The ``facts`` step: every user fact row as stored, blobs as ``{"hex": …}``."""
    rows = connection.execute(
        "SELECT id, e, a, v, t, tx, rx FROM fgraph_facts WHERE id > 39 ORDER BY id")
    out = []
    for row in rows:
        row = list(row)
        if isinstance(row[3], (bytes, bytearray, memoryview)):
            row[3] = {"hex": bytes(row[3]).hex()}
        out.append(row)
    return out


def excise_report(report: Any) -> Any:
    """Our excise report has extra keys (``scrub``); drop them so both runtimes compare."""
    if isinstance(report, dict):
        return {k: v for k, v in report.items() if k not in EXCISE_EXTRA_KEYS}
    return report
