"""What the progress tests share (tests/cli/test_progress*.py): the environment their CLI calls get
(a terminal type and width so rich draws) and the import they start from."""

from __future__ import annotations

from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.paths import FIXTURES

DECISIONS = FIXTURES / "import" / "decisions.clean.jsonl"
PROGRESS_ENV = {"FGRAPH_CLOCK": str(CONFORMANCE_CLOCK), "FGRAPH_EVENT_SEED": "progress-tests", "TERM": "xterm",
                "COLUMNS": "100"}
