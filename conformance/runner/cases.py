"""The case format (spec 11 §2 and the project's extensions, docs/conformance.md): the actions and
their modifiers, strict loading and validation, the first-release subset rule, case discovery."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from .encoding import canonical_dumps, loads_strict
from .outcomes import CaseFormatError


# --------------------------------------------------------------------------
# Case format

GENESIS_AT = 1767225600000000
CLOCK_STEP = 1_000_000
EVENT_SEED = "fgraph-conformance-v2"

ERROR_NAMES = frozenset({
    "NotFound", "Conflict", "SchemaError", "TypeError", "QueryError",
    "FormatError", "ReadOnly", "TooLarge", "Unsupported",
})

#: actions of the first release
# Keys `info` may print beyond the stats of spec 09 §6.1: ours adds the latest transaction and its
# time (so scripts can pass --if-basis-tx); stats steps compare the spec's keys exactly.
INFO_EXTENSION_KEYS = ("latest_at", "latest_tx")
CORE_READS = frozenset({"stats", "receipt", "entity", "history", "why", "diff", "facts"})
CORE_WRITES = frozenset({"tx", "declare", "undo"})
#: project extension (spec 04): ``events`` reads the event/1 stream
#: (``event_records`` / ``tail``), ``apply`` merges one (``apply_summary`` / ``apply -``)
STREAM_READS = frozenset({"events"})
STREAM_WRITES = frozenset({"apply"})
#: project extension (spec 05, 07): ``snapshot`` reads the snapshot/1 stream
#: (``snapshot()`` / ``snapshot``), ``restore`` loads one into the pristine database
#: (``restore`` / ``restore -``), ``excise`` erases an entity or attribute
#: (``excise`` / ``excise REF --operation-id ID --if-basis-tx N``)
SNAPSHOT_READS = frozenset({"snapshot"})
SNAPSHOT_WRITES = frozenset({"restore"})
HISTORY_WRITES = frozenset({"excise"})
#: project extension (spec 09 §4.1): ``batch`` is ``add -`` in batch mode — NDJSON
#: records, ``--batch-size N`` and optionally ``--operation-id-prefix P``. It is a CLI
#: feature, so library adapters cannot express it (the case is then skipped there).
BATCH_WRITES = frozenset({"batch"})
BATCH_KEYS = frozenset({"records", "batch_size", "operation_id_prefix"})
#: project extension (issue 27): ``add_stdin`` is ``add -`` given raw bytes (base64 in the case,
#: so undecodable ones can be written down), optionally ``--batch-size N``. A CLI feature; and
#: since a failing NDJSON add keeps the lines (or batches) before the failing one, a library
#: adapter skips the whole case, failing step or not.
STDIN_WRITES = frozenset({"add_stdin"})
STDIN_KEYS = frozenset({"base64", "batch_size"})
PARTIAL_WRITES = STDIN_WRITES
#: the query surface of spec 12: ``q`` (``q(query, args)`` / ``q QUERY --args``), ``explain``
QUERY_READS = frozenset({"q", "explain", "datoms"})
#: the schema surface of spec 13 §11–§13: ``schema``, ``attributes`` (library only) and
#: ``validate`` read; ``shape`` (``declare_shape`` / ``shape NAME``) writes
SCHEMA_READS = frozenset({"schema", "attributes", "validate", "schema_manifest", "schema_check"})
SCHEMA_WRITES = frozenset({"shape", "schema_apply"})
#: retrieval, spec 13 §2–§10: ``search`` (``search(**value)`` / ``search --text … --filter …``)
SEARCH_READS = frozenset({"search"})
#: actions marked "later" in 11 §2 (reads are skipped, writes skip the case)
LATER_READS: frozenset = frozenset()
LATER_WRITES: frozenset = frozenset()
ACTIONS = (CORE_READS | CORE_WRITES | STREAM_READS | STREAM_WRITES | SNAPSHOT_READS | QUERY_READS
           | SCHEMA_READS | SCHEMA_WRITES | SEARCH_READS
           | SNAPSHOT_WRITES | HISTORY_WRITES | BATCH_WRITES | STDIN_WRITES | LATER_READS | LATER_WRITES | {"at"})
WRITE_ACTIONS = (CORE_WRITES | STREAM_WRITES | SNAPSHOT_WRITES | HISTORY_WRITES | BATCH_WRITES | STDIN_WRITES
                 | LATER_WRITES | SCHEMA_WRITES)
EVENTS_KEYS = frozenset({"since", "through"})
EXCISE_KEYS = frozenset({"ref", "operation_id", "if_basis_tx"})
#: keys of our excise report that the published runtime does not have: ``scrub``
#: describes the physical scrub (freelist, WAL) and is dropped before matching
EXCISE_EXTRA_KEYS = ("scrub",)

#: modifiers a step may carry besides its action. ``depth`` on ``entity`` is a
#: project extension (``entity(ref, depth=N)`` / ``get --depth N``); so is ``budget`` on ``q``
#: (``--query-budget N``, CLI only: the library adapter's one handle has the default budget).
MODIFIERS = {"options": {"tx"}, "steps": {"at"}, "args": {"q", "explain"},
             "depth": {"entity"}, "budget": {"q"}}
CASE_KEYS = ("name", "comment", "steps")


def load_case(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load and validate one case file."""
    text = Path(path).read_text(encoding="utf-8")
    case = loads_strict(text)
    validate_case(case)
    return case


def step_action(step: dict[str, Any]) -> str:
    actions = [key for key in step if key in ACTIONS]
    if len(actions) != 1:
        raise CaseFormatError(f"a step needs exactly one action key, got {sorted(step)}")
    return actions[0]


def validate_case(case: Any) -> None:
    if not isinstance(case, dict) or not isinstance(case.get("steps"), list):
        raise CaseFormatError("a case is an object with a 'steps' array")
    extra = set(case) - set(CASE_KEYS)
    if extra:
        raise CaseFormatError(f"unknown case keys {sorted(extra)}")
    _validate_steps(case["steps"], "steps")


def _validate_steps(steps: list[Any], path: str) -> None:
    for index, step in enumerate(steps):
        where = f"{path}[{index}]"
        if not isinstance(step, dict):
            raise CaseFormatError(f"{where}: a step is an object")
        action = step_action(step)
        for key in step:
            if key in (action, "expect", "error"):
                continue
            if key not in MODIFIERS or action not in MODIFIERS[key]:
                raise CaseFormatError(f"{where}: unknown modifier {key!r} for action {action!r}")
        if "expect" in step and "error" in step:
            raise CaseFormatError(f"{where}: a step has at most one of expect/error")
        if "error" in step and step["error"] not in ERROR_NAMES:
            raise CaseFormatError(f"{where}: unknown error name {step['error']!r}")
        if "budget" in step and (isinstance(step["budget"], bool) or not isinstance(step["budget"], int)):
            raise CaseFormatError(f"{where}: 'budget' is an integer")
        check = STEP_CHECKS.get(action)
        if check is not None:
            check(step, where)


def _check_events(step: dict[str, Any], where: str) -> None:
    value = step["events"]
    if not isinstance(value, dict) or set(value) - EVENTS_KEYS:
        raise CaseFormatError(f"{where}: 'events' takes an object with 'since' and/or 'through'")


def _check_stream(action: str) -> Callable[[dict[str, Any], str], None]:
    def check(step: dict[str, Any], where: str) -> None:
        _validate_stream_items(step[action], where, action)
    return check


def _check_snapshot(step: dict[str, Any], where: str) -> None:
    if step["snapshot"] != {}:
        raise CaseFormatError(f"{where}: 'snapshot' takes {{}}")


def _check_excise(step: dict[str, Any], where: str) -> None:
    value = step["excise"]
    if not isinstance(value, dict) or "ref" not in value or set(value) - EXCISE_KEYS:
        raise CaseFormatError(f"{where}: 'excise' takes an object with 'ref' and optionally "
                              f"'operation_id' and 'if_basis_tx'")


def _check_batch(step: dict[str, Any], where: str) -> None:
    value = step["batch"]
    if not isinstance(value, dict) or not {"records", "batch_size"} <= set(value) \
            or set(value) - BATCH_KEYS or not isinstance(value["records"], list) or not value["records"]:
        raise CaseFormatError(f"{where}: 'batch' takes an object with 'records' (a non-empty list), "
                              f"'batch_size' and optionally 'operation_id_prefix'")


def _check_add_stdin(step: dict[str, Any], where: str) -> None:
    value = step["add_stdin"]
    if not isinstance(value, dict) or "base64" not in value or set(value) - STDIN_KEYS \
            or not isinstance(value["base64"], str):
        raise CaseFormatError(f"{where}: 'add_stdin' takes an object with 'base64' (the stdin bytes) "
                              f"and optionally 'batch_size'")
    try:
        base64.b64decode(value["base64"], validate=True)
    except ValueError:
        raise CaseFormatError(f"{where}: 'add_stdin' base64 is not valid base64") from None


def _check_at(step: dict[str, Any], where: str) -> None:
    if "error" in step and "steps" in step:
        raise CaseFormatError(f"{where}: an 'at' step with 'error' has no 'steps'")
    if "expect" in step:
        raise CaseFormatError(f"{where}: an 'at' step has no 'expect'")
    _validate_steps(step.get("steps", []), f"{where}.steps")


#: what an action's value must look like, beyond the modifiers every step is checked for
STEP_CHECKS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "events": _check_events,
    "apply": _check_stream("apply"),
    "restore": _check_stream("restore"),
    "snapshot": _check_snapshot,
    "excise": _check_excise,
    "batch": _check_batch,
    "add_stdin": _check_add_stdin,
    "at": _check_at,
}


def _validate_stream_items(items: Any, where: str, action: str = "apply") -> None:
    if not isinstance(items, list):
        raise CaseFormatError(f"{where}: {action!r} takes a list of records and raw lines")
    for index, item in enumerate(items):
        if isinstance(item, str):
            if "\n" in item:
                raise CaseFormatError(f"{where}: {action}[{index}]: a raw line cannot contain LF")
        elif isinstance(item, dict):
            canonical_dumps(item)  # must be encodable
        else:
            raise CaseFormatError(f"{where}: {action}[{index}]: a record (object) or a raw "
                                  f"line (string)")


def iter_steps(steps: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every step, nested ``at`` steps included, in document order."""
    for step in steps:
        yield step
        if "at" in step:
            yield from iter_steps(step.get("steps", []))


def subset_skip_reason(case: dict[str, Any]) -> str | None:
    """11 §2.4: a case with a later write step is skipped entirely."""
    for step in iter_steps(case["steps"]):
        action = step_action(step)
        if action in LATER_WRITES:
            return f"first-release subset: the case uses the later write step {action!r}"
    return None


def case_files(root: str | os.PathLike[str]) -> list[Path]:
    """Every ``*.json`` case under ``root``, sorted by relative path."""
    base = Path(root)
    if not base.is_dir():
        return []
    return sorted(base.rglob("*.json"), key=lambda p: p.relative_to(base).as_posix())
