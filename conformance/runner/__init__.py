"""Conformance case runner (spec 11): load cases, match results, drive runtimes.

Dependency-free on purpose (stdlib; ``apsw`` only for the CLI ``facts`` step,
imported lazily, with the stdlib ``sqlite3`` as fallback) so that the same package
runs under this project's venv and under the published runtime's Python
(``conformance/derive.py`` and ``tests/interop/test_conformance.py`` load it by path).

- :mod:`.cases` — the case format: actions, modifiers, strict loading, validation
  (a check per action in ``STEP_CHECKS``), the first-release subset rule, discovery;
- :mod:`.encoding` — case JSON and canonical JSON (spec 02 §4), NDJSON streams, :func:`seal`;
- :mod:`.matching` — the matcher of 11 §2.1 and the multiset rule for unordered ``q`` rows;
- :mod:`.running` — :func:`run_case` (raises :class:`CaseFailure` or :class:`CaseSkipped`,
  returns a :class:`CaseReport`) and :func:`perform_raw` for derive.py;
- :mod:`.library` — :class:`LibraryAdapter`, one entry of ``LIBRARY_STEPS`` per action (11 §3);
- :mod:`.cli` and :mod:`.cli_args` — :class:`CliAdapter`, one command builder of
  ``CLI_COMMANDS`` per action (spec 09).

Project extensions beyond 11 §2 (docs/conformance.md): ``entity`` with ``depth``;
``events`` / ``apply`` (event/1 streams); ``snapshot`` / ``restore`` (snapshot/1);
``excise``; ``batch`` and ``add_stdin``; ``budget`` on ``q``.
"""

from .adapter import Adapter, excise_report
from .cases import (
    ACTIONS, CLOCK_STEP, ERROR_NAMES, EVENT_SEED, EXCISE_EXTRA_KEYS, GENESIS_AT, LATER_READS,
    LATER_WRITES, PARTIAL_WRITES, STEP_CHECKS, WRITE_ACTIONS, case_files, iter_steps, load_case,
    step_action, subset_skip_reason, validate_case,
)
from .cli import CliAdapter
from .cli_args import CLI_COMMANDS, Command, excise_command
from .encoding import canonical_dumps, dumps_json, format_float, loads_strict, parse_ndjson, seal, stream_text
from .library import LIBRARY_STEPS, LibraryAdapter
from .matching import match, rows_as_multiset, to_jsonable
from .outcomes import (
    CaseFailure, CaseFormatError, CaseReport, CaseSkipped, NotExpressible, RuntimeCrash, StepError,
)
from .running import perform_raw, run_case

__all__ = [
    "ACTIONS", "CLI_COMMANDS", "CLOCK_STEP", "ERROR_NAMES", "EVENT_SEED", "EXCISE_EXTRA_KEYS",
    "GENESIS_AT", "LATER_READS", "LATER_WRITES", "LIBRARY_STEPS", "PARTIAL_WRITES", "STEP_CHECKS",
    "WRITE_ACTIONS", "Adapter", "CaseFailure", "CaseFormatError", "CaseReport", "CaseSkipped",
    "CliAdapter", "Command", "LibraryAdapter", "NotExpressible", "RuntimeCrash", "StepError",
    "canonical_dumps", "case_files", "dumps_json", "excise_command", "excise_report", "format_float",
    "iter_steps", "load_case", "loads_strict", "match", "parse_ndjson", "perform_raw", "rows_as_multiset",
    "run_case", "seal", "step_action", "stream_text", "subset_skip_reason", "to_jsonable", "validate_case",
]
