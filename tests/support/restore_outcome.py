"""What one restore ends with, for tests that compare two ways of restoring the same stream."""

from __future__ import annotations

import fgraph
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.corerows import core_rows


def restore_outcome(path, data: bytes):
    """``(("ok",) or ("error", name, line, message), core rows)`` of restoring ``data`` into a new
    store at ``path``, whose genesis rows are alike in every such store (the conformance clock)."""
    db = fgraph.connect(str(path), clock=lambda: CONFORMANCE_CLOCK)
    try:
        db.restore(data)
        result = ("ok",)
    except fgraph.FgraphError as exc:
        result = ("error", exc.name, exc.line, str(exc))
    finally:
        db.close()
    return result, core_rows(str(path))
