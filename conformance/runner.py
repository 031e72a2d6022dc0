"""Conformance case runner (spec 11): load cases, match results, drive runtimes.

Dependency-free on purpose (stdlib; ``apsw`` only for the CLI ``facts`` step,
imported lazily, with the stdlib ``sqlite3`` as fallback) so that the same file
runs under this project's venv and under the published runtime's Python
(``conformance/derive.py`` imports it by path).

Entry points:

- :func:`load_case` — strict JSON loading of a case file.
- :func:`match` — the matcher of 11 §2.1 (returns a list of mismatches).
- :func:`subset_skip_reason` — the first-release subset rule of 11 §2.4.
- :class:`LibraryAdapter` — drives an in-process Python library (11 §3).
- :class:`CliAdapter` — drives any runtime's ``fgraph`` executable (09).
- :func:`run_case` — runs one case on one adapter; raises :class:`CaseFailure`
  or :class:`CaseSkipped`, returns a :class:`CaseReport` otherwise.
- :func:`seal` — the footer of a snapshot/1 body, for writing re-sealed mutations.

Project extensions beyond 11 §2 (docs/conformance.md): ``entity`` with ``depth``;
``events`` / ``apply`` (event/1 streams); ``snapshot`` / ``restore`` (snapshot/1);
``excise``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

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


class CaseFormatError(ValueError):
    """The case file itself is malformed."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CaseFormatError(f"duplicate key {key!r} in case JSON")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise CaseFormatError(f"non-standard JSON literal {name} in case JSON")


def loads_strict(text: str) -> Any:
    """Parse JSON rejecting duplicate keys and NaN/Infinity literals."""
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def dumps_json(value: Any, *, ascii_only: bool = False, separators: tuple[str, str] = (",", ":")) -> str:
    """Serialize case JSON. Unlike ``json.dumps`` it writes an infinite float as
    ``1e400`` / ``-1e400`` (the literal that parses to it), so case data that
    tests overflow survives a round trip; NaN is refused."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        if value != value:
            raise ValueError("NaN cannot appear in case JSON")
        if value in (float("inf"), float("-inf")):
            return "1e400" if value > 0 else "-1e400"
        return repr(value)
    if isinstance(value, int):
        return json.dumps(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=ascii_only)
        # keep case files readable and encodable: escape DEL, C1 controls, line and
        # paragraph separators and lone surrogates
        return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    if isinstance(value, dict):
        item, sep = separators
        return "{" + item.join(json.dumps(str(k), ensure_ascii=ascii_only) + sep
                               + dumps_json(v, ascii_only=ascii_only, separators=separators)
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + separators[0].join(
            dumps_json(v, ascii_only=ascii_only, separators=separators) for v in value) + "]"
    raise TypeError(f"cannot serialize {type(value).__name__} as case JSON")


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
        if action == "events":
            value = step["events"]
            if not isinstance(value, dict) or set(value) - EVENTS_KEYS:
                raise CaseFormatError(f"{where}: 'events' takes an object with 'since' and/or 'through'")
        if action in ("apply", "restore"):
            _validate_stream_items(step[action], where, action)
        if action == "snapshot" and step["snapshot"] != {}:
            raise CaseFormatError(f"{where}: 'snapshot' takes {{}}")
        if action == "excise":
            value = step["excise"]
            if not isinstance(value, dict) or "ref" not in value or set(value) - EXCISE_KEYS:
                raise CaseFormatError(f"{where}: 'excise' takes an object with 'ref' and optionally "
                                      f"'operation_id' and 'if_basis_tx'")
        if action == "batch":
            value = step["batch"]
            if not isinstance(value, dict) or not {"records", "batch_size"} <= set(value) \
                    or set(value) - BATCH_KEYS or not isinstance(value["records"], list) or not value["records"]:
                raise CaseFormatError(f"{where}: 'batch' takes an object with 'records' (a non-empty list), "
                                      f"'batch_size' and optionally 'operation_id_prefix'")
        if action == "add_stdin":
            value = step["add_stdin"]
            if not isinstance(value, dict) or "base64" not in value or set(value) - STDIN_KEYS \
                    or not isinstance(value["base64"], str):
                raise CaseFormatError(f"{where}: 'add_stdin' takes an object with 'base64' (the stdin bytes) "
                                      f"and optionally 'batch_size'")
            try:
                base64.b64decode(value["base64"], validate=True)
            except ValueError:
                raise CaseFormatError(f"{where}: 'add_stdin' base64 is not valid base64") from None
        if "budget" in step and (isinstance(step["budget"], bool) or not isinstance(step["budget"], int)):
            raise CaseFormatError(f"{where}: 'budget' is an integer")
        if action == "at":
            if "error" in step and "steps" in step:
                raise CaseFormatError(f"{where}: an 'at' step with 'error' has no 'steps'")
            if "expect" in step:
                raise CaseFormatError(f"{where}: an 'at' step has no 'expect'")
            _validate_steps(step.get("steps", []), f"{where}.steps")


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


# --------------------------------------------------------------------------
# Canonical JSON (spec 02 §4), for the ``apply`` stream and for checking tail bytes.
# Stdlib only: the runner also runs under the published runtime's Python.


def format_float(x: float) -> str:
    """Spec 02 §4.2."""
    if x != x or x in (float("inf"), float("-inf")):
        raise CaseFormatError("a non-finite float has no canonical JSON form")
    if x == 0.0:
        return "0"
    if x.is_integer() and -(2**63) <= int(x) <= 2**63 - 1:
        return str(int(x))
    mant, _, exp_text = repr(abs(x)).partition("e")
    exp = int(exp_text) if exp_text else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    point = (len(ip) + exp) if ip != "0" else exp - (len(fp) - len(fp.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    sign = "-" if x < 0 else ""
    if 1e-6 <= abs(x) < 1e21 and not x.is_integer():
        if point <= 0:
            text = "0." + "0" * (-point) + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits))
        else:
            text = digits[:point] + "." + digits[point:]
        return sign + text
    e = point - 1
    m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{m}e{'+' if e >= 0 else '-'}{abs(e)}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _canonical_str(value: str) -> str:
    if _SURROGATE.search(value):
        raise CaseFormatError(f"a lone surrogate has no canonical JSON form: {value!r}")
    return json.dumps(value, ensure_ascii=False)  # = json.encoder.encode_basestring


def canonical_dumps(value: Any) -> str:
    """Canonical JSON (spec 02 §4): code-point key order, no whitespace, UTF-8 strings,
    02 §4.2 floats, 64-bit integers. Raises CaseFormatError for what it cannot encode."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        if not -(2**63) <= value <= 2**63 - 1:
            raise CaseFormatError(f"integer {value} is outside signed 64-bit")
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return _canonical_str(value)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise CaseFormatError("object keys must be strings")
        return "{" + ",".join(_canonical_str(k) + ":" + canonical_dumps(value[k])
                              for k in sorted(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_dumps(v) for v in value) + "]"
    raise CaseFormatError(f"{type(value).__name__} has no canonical JSON form")


def stream_text(items: list[Any]) -> str:
    """The NDJSON text of an ``apply`` step: each record in canonical JSON, each raw
    line verbatim, every line followed by one LF (an empty list gives ``""``)."""
    return "".join((item if isinstance(item, str) else canonical_dumps(item)) + "\n"
                   for item in items)


def parse_ndjson(text: str) -> list[Any]:
    """Parse a canonical NDJSON stream (``tail`` output): LF-only splitting, every
    line LF-terminated and byte-identical to the canonical form of its record."""
    if not text:
        return []
    if not text.endswith("\n"):
        raise ValueError(f"the stream does not end with LF: {text[-80:]!r}")
    records = []
    for number, line in enumerate(text[:-1].split("\n"), 1):
        record = loads_strict(line)
        canonical = canonical_dumps(record)
        if canonical != line:
            raise ValueError(f"line {number} is not canonical JSON: {line[:300]!r} "
                             f"(canonical: {canonical[:300]!r})")
        records.append(record)
    return records


def seal(records: list[Any]) -> list[Any]:
    """A snapshot/1 body (header, receipts, facts; no footer) plus its footer (spec 05 §1):
    the counts and the SHA-256 over every record's canonical bytes + LF. Used to write
    re-sealed mutations (05 §2.8) into cases."""
    body = "".join(canonical_dumps(record) + "\n" for record in records)
    receipts = sum(1 for r in records if isinstance(r, dict) and "receipt" in r)
    facts = sum(1 for r in records if isinstance(r, dict) and "fact" in r)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return [*records, {"facts": facts, "fgraph": "end", "receipts": receipts, "sha256": digest}]


def _excise_report(report: Any) -> Any:
    """Our excise report has extra keys (``scrub``); drop them so both runtimes compare."""
    if isinstance(report, dict):
        return {k: v for k, v in report.items() if k not in EXCISE_EXTRA_KEYS}
    return report


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


# --------------------------------------------------------------------------
# Matching (11 §2.1)

def to_jsonable(value: Any) -> Any:
    """Convert a runtime result to plain JSON types (dict/list/str/int/float/bool/None)."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        value = to_dict()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    raise TypeError(f"result value of type {type(value).__name__} is not JSON: {value!r}")


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def match(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Mismatches between an expectation and an actual JSON value (empty = match).

    Objects: exactly the expected keys unless the expected object holds
    ``"...": true`` (extra keys allowed at that level only). Arrays: same length
    and order. Numbers compare numerically (``0 == 0.0``); booleans strictly
    (``true`` never equals ``1``).
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {_short(actual)}"]
        problems: list[str] = []
        open_object = expected.get("...") is True
        for key, want in expected.items():
            if key == "..." and want is True:
                continue
            if key not in actual:
                problems.append(f"{path}.{key}: missing (expected {_short(want)})")
            else:
                problems.extend(match(want, actual[key], f"{path}.{key}"))
        if not open_object:
            for key in actual:
                if key not in expected:
                    problems.append(f"{path}.{key}: unexpected key (value {_short(actual[key])})")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected an array, got {_short(actual)}"]
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} items, got {len(actual)}: {_short(actual)}"]
        problems = []
        for index, (want, got) in enumerate(zip(expected, actual)):
            problems.extend(match(want, got, f"{path}[{index}]"))
        return problems
    if isinstance(expected, bool) or isinstance(actual, bool):
        if type(expected) is not type(actual) or expected != actual:
            return [f"{path}: expected {_short(expected)}, got {_short(actual)}"]
        return []
    if isinstance(expected, (int, float)):
        if not isinstance(actual, (int, float)) or expected != actual:
            return [f"{path}: expected {_short(expected)}, got {_short(actual)}"]
        return []
    if expected is None:
        return [] if actual is None else [f"{path}: expected null, got {_short(actual)}"]
    if isinstance(expected, str):
        if not isinstance(actual, str) or expected != actual:
            return [f"{path}: expected {_short(expected)}, got {_short(actual)}"]
        return []
    raise CaseFormatError(f"{path}: expectation of type {type(expected).__name__}")


# --------------------------------------------------------------------------
# Outcomes


class CaseSkipped(Exception):
    """The whole case cannot run on this adapter (reason in args[0])."""


class CaseFailure(AssertionError):
    """A step did not behave as the case says."""


class NotExpressible(Exception):
    """This adapter cannot express the step (reason in args[0])."""


class StepError(Exception):
    """The runtime raised a typed error for the step."""

    def __init__(self, name: str, message: str = ""):
        super().__init__(name, message)
        self.name = name
        self.message = message

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


class RuntimeCrash(Exception):
    """The runtime failed in a way that is not a typed fgraph error."""


@dataclass
class CaseReport:
    adapter: str
    ran: int = 0
    skipped: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------
# Running


def run_case(case: dict[str, Any], adapter: "Adapter") -> CaseReport:
    """Run one case on a fresh database of ``adapter``."""
    reason = subset_skip_reason(case)
    if reason:
        raise CaseSkipped(reason)
    adapter.check_case(case)
    report = CaseReport(adapter=adapter.label)
    adapter.start()
    try:
        _run_steps(case["steps"], adapter, adapter.root(), "steps", report)
    finally:
        adapter.stop()
    if report.ran == 0:
        # A green case must have checked something (docs/conformance.md).
        raise CaseSkipped(f"no step of this case can run on {adapter.label}: " + "; ".join(report.skipped[:3]))
    return report


def _describe(step: dict[str, Any]) -> str:
    return _short({k: v for k, v in step.items() if k not in ("steps", "expect")}, 400)


def _run_steps(steps: list[dict[str, Any]], adapter: "Adapter", ctx: Any, path: str,
               report: CaseReport) -> None:
    for index, step in enumerate(steps):
        where = f"{path}[{index}]"
        action = step_action(step)
        if action in LATER_READS:
            report.skipped.append(f"{where}: later read step {action!r}")
            continue
        try:
            if action == "at":
                outcome = _attempt(lambda: adapter.view(ctx, step["at"], step), where, step)
            else:
                outcome = _attempt(lambda: adapter.perform(ctx, action, step), where, step)
        except NotExpressible as exc:
            if action in WRITE_ACTIONS and ("error" not in step or action in PARTIAL_WRITES):
                # Every later step may depend on this write: the case cannot run here.
                raise CaseSkipped(f"{adapter.label} cannot express {where} ({exc.args[0]})") from None
            # A read, or a write that must fail (a failing write changes nothing, 08 §2).
            report.skipped.append(f"{where}: {exc.args[0]}")
            continue
        report.ran += 1
        kind, value = outcome
        if "error" in step:
            if kind == "ok":
                raise CaseFailure(f"{where} {_describe(step)}: expected {step['error']}, "
                                  f"got a result: {_short(value)}")
            if value.name != step["error"]:
                raise CaseFailure(f"{where} {_describe(step)}: expected {step['error']}, "
                                  f"got {value}")
            continue
        if kind == "error":
            raise CaseFailure(f"{where} {_describe(step)}: unexpected error {value}")
        if action == "at":
            _run_steps(step.get("steps", []), adapter, value, f"{where}.steps", report)
            continue
        if "expect" in step:
            expected, actual = adapter.normalize(action, step["expect"], value)
            if action == "q" and not _ordered(step["q"]):
                expected, actual = rows_as_multiset(expected, actual)
            problems = match(expected, actual)
            if problems:
                listed = "\n  ".join(problems[:20])
                raise CaseFailure(f"{where} {_describe(step)}: result does not match:\n  {listed}"
                                  f"\nactual: {_short(actual, 2000)}")


def _ordered(query: Any) -> bool:
    return isinstance(query, dict) and isinstance(query.get("order"), list) and bool(query["order"])


def rows_as_multiset(expected: Any, actual: Any) -> tuple[Any, Any]:
    """11 §2.1: the rows of an unordered ``q`` compare as a multiset. Each expected row is paired
    with the first unpaired actual row it matches; the actual rows are put in that order (the
    unpaired ones last) so ``match`` then reports any real difference."""
    if not (isinstance(expected, dict) and isinstance(actual, dict) and isinstance(expected.get("rows"), list)
            and isinstance(actual.get("rows"), list)):
        return expected, actual
    pool = list(actual["rows"])
    ordered = []
    for want in expected["rows"]:
        for k, got in enumerate(pool):
            if not match(want, got):
                ordered.append(pool.pop(k))
                break
    return expected, dict(actual, rows=ordered + pool)


def _attempt(call: Callable[[], Any], where: str, step: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except StepError as exc:
        return "error", exc
    except RuntimeCrash as exc:
        raise CaseFailure(f"{where} {_describe(step)}: runtime crashed: {exc}") from exc


def perform_raw(case: dict[str, Any], adapter: "Adapter",
                visit: Callable[[dict[str, Any], str, tuple[str, Any] | None], None]) -> None:
    """Run every step and hand each outcome to ``visit`` (no matching) — for derive.py.

    ``visit(step, where, outcome)``: outcome is ``("ok", result)``,
    ``("error", name)`` or ``None`` for a skipped later read. Nested steps of an
    ``at`` run only when the view opened.
    """
    adapter.start()
    try:
        _perform_steps(case["steps"], adapter, adapter.root(), "steps", visit)
    finally:
        adapter.stop()


def _perform_steps(steps, adapter, ctx, path, visit) -> None:
    for index, step in enumerate(steps):
        where = f"{path}[{index}]"
        action = step_action(step)
        if action in LATER_READS:
            visit(step, where, None)
            continue
        call = ((lambda: adapter.view(ctx, step["at"], step)) if action == "at"
                else (lambda: adapter.perform(ctx, action, step)))
        try:
            outcome: tuple[str, Any] = ("ok", call())
        except StepError as exc:
            outcome = ("error", exc.name)
        visit(step, where, outcome)
        if action == "at" and outcome[0] == "ok":
            _perform_steps(step.get("steps", []), adapter, outcome[1], f"{where}.steps", visit)


# --------------------------------------------------------------------------
# Adapters


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


def _ref_args(value: Any) -> list[Any]:
    """``history``/``why`` value: a selector or ``[selector, attr]``."""
    return list(value) if isinstance(value, list) else [value]


def _facts_rows(connection: Any) -> list[list[Any]]:
    rows = connection.execute(
        "SELECT id, e, a, v, t, tx, rx FROM fgraph_facts WHERE id > 39 ORDER BY id")
    out = []
    for row in rows:
        row = list(row)
        if isinstance(row[3], (bytes, bytearray, memoryview)):
            row[3] = {"hex": bytes(row[3]).hex()}
        out.append(row)
    return out


class LibraryAdapter(Adapter):
    """Drives a Python library with the 11 §3 surface in-process (``:memory:``)."""

    def __init__(self, module: Any, label: str = "lib"):
        self.module = module
        self.label = label
        self.db: Any = None
        self._saved_seed: str | None = None
        base = getattr(module, "FgraphError", None) or getattr(module, "FGraphError", None)
        self.error_base: type[BaseException] | None = base if isinstance(base, type) else None

    # clock: first reading is genesis, then +1 s per reading (11 §2.3)
    @staticmethod
    def make_clock() -> Callable[[], int]:
        state = {"next": GENESIS_AT}

        def clock() -> int:
            value = state["next"]
            state["next"] = value + CLOCK_STEP
            return value

        return clock

    def start(self) -> None:
        self._saved_seed = os.environ.get("FGRAPH_EVENT_SEED")
        os.environ["FGRAPH_EVENT_SEED"] = EVENT_SEED
        try:
            self.db = self._call(lambda: self.module.connect(":memory:", clock=self.make_clock()))
        except BaseException:
            self._restore_env()
            raise

    def stop(self) -> None:
        try:
            if self.db is not None:
                close = getattr(self.db, "close", None)
                if callable(close):
                    close()
        finally:
            self.db = None
            self._restore_env()

    def _restore_env(self) -> None:
        if self._saved_seed is None:
            os.environ.pop("FGRAPH_EVENT_SEED", None)
        else:
            os.environ["FGRAPH_EVENT_SEED"] = self._saved_seed

    def root(self) -> Any:
        return self.db

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classify below
            cls = type(exc)
            name = getattr(cls, "name", cls.__name__)
            typed = (isinstance(exc, self.error_base) if self.error_base is not None
                     else name in ERROR_NAMES)
            if typed and isinstance(name, str):
                raise StepError(name, str(exc)) from exc
            raise RuntimeCrash(f"{cls.__module__}.{cls.__qualname__}: {exc}") from exc

    def view(self, ctx: Any, value: Any, step: dict[str, Any]) -> Any:
        return self._call(lambda: ctx.at(value))

    def perform(self, ctx: Any, action: str, step: dict[str, Any]) -> Any:
        value = step[action]
        if action == "facts":
            connection = getattr(self.db, "connection", None)
            if connection is None:
                connection = self.db._connection
            return _facts_rows(connection)
        if action == "tx":
            call = lambda: ctx.transact(value, **step.get("options", {}))  # noqa: E731
        elif action == "declare":
            rest = dict(value)
            attr = rest.pop("attr")
            call = lambda: ctx.declare(attr, **rest)  # noqa: E731
        elif action == "undo":
            rest = dict(value)
            target = rest.pop("target")
            call = lambda: ctx.undo(target, **rest)  # noqa: E731
        elif action == "receipt":
            call = lambda: ctx.receipt(value)  # noqa: E731
        elif action == "entity":
            if "depth" in step:
                call = lambda: ctx.entity(value, depth=step["depth"])  # noqa: E731
            else:
                call = lambda: ctx.entity(value)  # noqa: E731
        elif action == "history":
            call = lambda: ctx.history(*_ref_args(value))  # noqa: E731
        elif action == "why":
            call = lambda: ctx.why(*_ref_args(value))  # noqa: E731
        elif action == "diff":
            call = lambda: ctx.diff(*value)  # noqa: E731
        elif action == "stats":
            call = lambda: ctx.stats()  # noqa: E731
        elif action == "q":
            if "budget" in step:
                raise NotExpressible("a work budget is a handle option (connect(query_budget=N))")
            call = lambda: ctx.q(value, step.get("args"))  # noqa: E731
        elif action == "explain":
            call = lambda: ctx.explain(value, step.get("args"))  # noqa: E731
        elif action == "datoms":
            call = lambda: ctx.datoms(**value)  # noqa: E731
        elif action in ("schema", "attributes"):
            call = lambda: getattr(ctx, action)(**value)  # noqa: E731
        elif action == "validate":
            call = lambda: ctx.validate(value)  # noqa: E731
        elif action == "search":
            if not isinstance(value, dict):
                raise NotExpressible("search takes an object of keyword arguments")
            call = lambda: ctx.search(**value)  # noqa: E731
        elif action == "schema_manifest":
            call = lambda: ctx.schema_manifest()  # noqa: E731
        elif action == "schema_check":
            call = lambda: ctx.check_schema_manifest(value)  # noqa: E731
        elif action == "schema_apply":
            rest = dict(value)
            manifest = rest.pop("manifest")
            call = lambda: ctx.apply_schema_manifest(manifest, **rest)  # noqa: E731
        elif action == "shape":
            rest = dict(value)
            name = rest.pop("name")
            call = lambda: ctx.declare_shape(name, **rest)  # noqa: E731
        elif action == "events":
            call = lambda: ctx.event_records(**value)  # noqa: E731
        elif action == "apply":
            text = stream_text(value)
            call = lambda: ctx.apply_summary(text)  # noqa: E731
        elif action == "snapshot":
            text = self._call(lambda: ctx.snapshot())
            if not isinstance(text, str):
                raise RuntimeCrash(f"snapshot() returned {type(text).__name__}, not the stream text")
            try:
                return parse_ndjson(text)
            except (ValueError, CaseFormatError) as exc:
                raise RuntimeCrash(f"snapshot() gave a bad NDJSON stream ({exc})") from None
        elif action == "restore":
            text = stream_text(value)
            result = self._call(lambda: ctx.restore(text))
            if result is None:
                # The published restore() returns None: report the CLI's
                # {"basis_tx", "ok"}, basis_tx read from a no-op transaction's report.
                noop = to_jsonable(self._call(lambda: ctx.transact([])))
                return {"basis_tx": noop["basis_tx"], "ok": True}
            return to_jsonable(result)
        elif action == "excise":
            rest = dict(value)
            ref = rest.pop("ref")
            return _excise_report(to_jsonable(self._call(lambda: ctx.excise(ref, **rest))))
        else:
            raise NotExpressible(f"action {action!r} is not supported by this runner")
        result = self._call(call)
        return to_jsonable(result)


# ---- CLI


_ERROR_LINE = re.compile(r"^([A-Za-z]+): ")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _argv_safe(text: str) -> bool:
    return "\x00" not in text and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def _ref_arg(value: Any) -> str:
    """A CLI REF argument: a name or an id (a string of digits is an id, 09 §4)."""
    if _is_int(value):
        if value < 0:
            raise NotExpressible(f"negative id {value} (the CLI would read it as a name)")
        return str(value)
    if isinstance(value, str):
        if value.isascii() and value.isdigit():
            raise NotExpressible(f"name {value!r} is all digits (the CLI reads it as an id)")
        if not value or not _argv_safe(value):
            raise NotExpressible(f"name {value!r} cannot be an argument")
        return value
    raise NotExpressible(f"selector {_short(value)} is not a name or an id")


def _int_arg(value: Any, what: str) -> str:
    if not _is_int(value):
        raise NotExpressible(f"{what} {_short(value)} is not an integer")
    return str(value)


def _text_arg(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _argv_safe(value):
        raise NotExpressible(f"{what} {_short(value)} is not an argv-safe string")
    return value


def _positionals(values: list[str]) -> list[str]:
    """Positional arguments, after ``--`` when one could be read as an option."""
    if any(v.startswith("-") for v in values):
        return ["--", *values]
    return values


def _short_args(args: list[str]) -> str:
    text = shlex.join(args)
    return text if len(text) <= 300 else text[:297] + "..."


class CliAdapter(Adapter):
    """Drives a runtime's ``fgraph`` executable on a temporary file database.

    Environment: ``FGRAPH_CLOCK=1767225600000000`` and the event seed; the
    constant clock plus the monotonic rule (03 §8) give the library clock's
    times. Every command runs with ``--db FILE --json``.
    """

    #: CLI commands never compare the file size (``stats.size``)
    IGNORED_STATS_KEYS = ("size",)

    def __init__(self, executable: str | os.PathLike[str] | list[str], label: str = "cli",
                 timeout: float = 120.0):
        if isinstance(executable, (list, tuple)):
            self.command = [str(part) for part in executable]
        elif os.path.exists(str(executable)):
            self.command = [str(executable)]
        else:
            self.command = shlex.split(str(executable))
        self.label = label
        self.timeout = timeout
        self.tmpdir: str | None = None
        self.path: str | None = None
        self.initialized = False
        self.invocations = 0
        env = dict(os.environ)
        for key in ("FGRAPH_DB", "FGRAPH_QUERY_BUDGET"):
            env.pop(key, None)
        env["FGRAPH_CLOCK"] = str(GENESIS_AT)
        env["FGRAPH_EVENT_SEED"] = EVENT_SEED
        self.env = env

    # -- lifecycle
    def start(self) -> None:
        self.tmpdir = tempfile.mkdtemp(prefix="fgraph-conformance-")
        self.path = os.path.join(self.tmpdir, "case.fgraph")
        self.initialized = False

    def stop(self) -> None:
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
        self.tmpdir = self.path = None

    def root(self) -> Any:
        return None  # None = the live database; an int = the --at view

    # -- process
    def run(self, args: list[str], *, write: bool, stdin: bytes | None = None,
            ndjson: bool = False) -> Any:
        """Run one command; return its parsed JSON output (a list of records when
        ``ndjson``) or raise StepError/RuntimeCrash."""
        if not write and not self.initialized:
            self._invoke(["init"])
            self.initialized = True
        result = self._invoke(args, stdin=stdin, ndjson=ndjson)
        if write:
            self.initialized = True
        return result

    def _invoke(self, args: list[str], *, stdin: bytes | None = None, ndjson: bool = False) -> Any:
        assert self.path is not None, "adapter not started"
        argv = [*self.command, "--db", self.path, "--json", *args]
        self.invocations += 1
        proc = subprocess.run(argv, env=self.env, cwd=self.tmpdir, capture_output=True,
                              input=stdin, timeout=self.timeout, check=False)
        stdout = proc.stdout.decode("utf-8", errors="replace")
        stderr = proc.stderr.decode("utf-8", errors="replace")
        if proc.returncode == 0:
            if ndjson:
                try:
                    return parse_ndjson(proc.stdout.decode("utf-8"))
                except (ValueError, CaseFormatError) as exc:
                    raise RuntimeCrash(f"`{_short_args(args)}` printed a bad NDJSON stream "
                                       f"({exc})") from None
            try:
                return loads_strict(stdout)
            except (ValueError, CaseFormatError) as exc:
                raise RuntimeCrash(f"`{_short_args(args)}` printed non-JSON output "
                                   f"({exc}): {stdout[:500]!r}") from None
        first = stderr.splitlines()[0] if stderr else ""
        found = _ERROR_LINE.match(first)
        if proc.returncode == 1 and found and found.group(1) in ERROR_NAMES:
            raise StepError(found.group(1), first[found.end():])
        tail = [line for line in stderr.splitlines() if line.strip()][-3:]
        raise RuntimeCrash(f"`{_short_args(args)}` exited {proc.returncode}: "
                           + " | ".join(tail))

    # -- steps
    def view(self, ctx: Any, value: Any, step: dict[str, Any]) -> Any:
        if ctx is not None:
            raise NotExpressible("nested 'at' (the CLI has one --at per command)")
        at = _int_arg(value, "at value")  # the CLI's --at takes integers only
        if "error" in step:
            # Resolve the view through a read that cannot fail otherwise: system
            # identity 1 exists at every basis.
            self.run(["get", f"--at={at}", "1"], write=False)
        # Nested steps other than `entity` (and `facts`) are skipped one by one.
        return int(at)

    def perform(self, ctx: Any, action: str, step: dict[str, Any]) -> Any:
        value = step[action]
        if action == "facts":
            if not self.initialized:
                self.run(["init"], write=True)
            return self._facts()
        if ctx is not None and action not in ("entity", "q"):
            what = "a write" if action in WRITE_ACTIONS else f"{action!r}"
            raise NotExpressible(f"{what} inside 'at' (only `get --at` and `q --at` exist)")
        if action in QUERY_READS:
            return self.run(self._query_args(action, value, step, ctx), write=False)
        if action == "schema":
            return self.run(self._schema_args(value), write=False)
        if action == "search":
            return self.run(self._search_args(value), write=False)
        if action == "validate":
            return self.run(["validate", *_positionals([_ref_arg(value)])], write=False)
        if action == "schema_manifest":
            return self.run(["schema-export"], write=False)
        if action == "schema_check":
            return self.run(["schema-check", "-"], write=False,
                            stdin=dumps_json(value, ascii_only=True).encode("utf-8"))
        if action == "schema_apply":
            args = ["schema-apply", "-"]
            for key, option in value.items():
                if key == "operation_id":
                    args.append(f"--operation-id={_text_arg(option, 'operation_id')}")
                elif key == "if_basis_tx":
                    args.append(f"--if-basis-tx={_int_arg(option, 'if_basis_tx')}")
                elif key != "manifest":
                    raise NotExpressible(f"schema_apply option {key!r} has no CLI form")
            return self.run(args, write=True, stdin=dumps_json(value["manifest"], ascii_only=True).encode("utf-8"))
        if action == "shape":
            return self.run(self._shape_args(value), write=True)
        if action == "tx":
            return self.run(self._add_args(value, step.get("options", {})), write=True)
        if action == "declare":
            return self.run(self._declare_args(value), write=True)
        if action == "undo":
            return self.run(self._undo_args(value), write=True)
        if action == "stats":
            info = self.run(["info"], write=False)
            if isinstance(info, dict):  # this runtime's info adds the latest transaction (docs/cli.md)
                for key in INFO_EXTENSION_KEYS:
                    info.pop(key, None)
            return info
        if action == "receipt":
            return self.run(["tx", *_positionals([_int_arg(value, "transaction")])], write=False)
        if action == "entity":
            args = ["get"]
            if "depth" in step:
                args.append(f"--depth={_int_arg(step['depth'], 'depth')}")
            if ctx is not None:
                args.append(f"--at={ctx}")
            args.extend(_positionals([_ref_arg(value)]))
            return self.run(args, write=False)
        if action in ("history", "why"):
            parts = _ref_args(value)
            if not 1 <= len(parts) <= 2:
                raise NotExpressible(f"{action} takes a selector and an optional attribute")
            pos = [_ref_arg(parts[0])]
            if len(parts) == 2:
                pos.append(_text_arg(parts[1], "attribute"))
            return self.run([action, *_positionals(pos)], write=False)
        if action == "diff":
            if not isinstance(value, list) or len(value) != 2:
                raise NotExpressible("diff takes two times")
            pos = [_int_arg(value[0], "diff time"), _int_arg(value[1], "diff time")]
            return self.run(["diff", *_positionals(pos)], write=False)
        if action == "events":
            if "through" in value:
                raise NotExpressible("tail has no upper bound (through)")
            args = ["tail"]
            if "since" in value:
                args.append(f"--since={_int_arg(value['since'], 'since')}")
            return self.run(args, write=False, ndjson=True)
        if action == "apply":
            try:
                data = stream_text(value).encode("utf-8")
            except UnicodeEncodeError:
                raise NotExpressible("the stream is not encodable as UTF-8") from None
            return self.run(["apply", "-"], write=True, stdin=data)
        if action == "snapshot":
            # NDJSON; every line must be byte-identical to its canonical form
            return self.run(["snapshot"], write=False, ndjson=True)
        if action == "restore":
            try:
                data = stream_text(value).encode("utf-8")
            except UnicodeEncodeError:
                raise NotExpressible("the stream is not encodable as UTF-8") from None
            return self.run(["restore", "-"], write=True, stdin=data)
        if action == "excise":
            return _excise_report(self.run(self._excise_args(value), write=True))
        if action == "add_stdin":
            args = ["add", "-"]
            if "batch_size" in value:
                args.append(f"--batch-size={_int_arg(value['batch_size'], 'batch_size')}")
            return self.run(args, write=True, stdin=base64.b64decode(value["base64"]))
        if action == "batch":
            args = ["add", "-", f"--batch-size={_int_arg(value['batch_size'], 'batch_size')}"]
            if "operation_id_prefix" in value:
                args.append(f"--operation-id-prefix={_text_arg(value['operation_id_prefix'], 'prefix')}")
            records = "".join(dumps_json(r, ascii_only=True) + "\n" for r in value["records"])
            return self.run(args, write=True, stdin=records.encode("utf-8"))
        raise NotExpressible(f"action {action!r} has no CLI form")

    def _query_args(self, action: str, query: Any, step: dict[str, Any], ctx: Any) -> list[str]:
        if action == "datoms":
            return self._datoms_args(query, ctx)
        args = [f"--query-budget={_int_arg(step['budget'], 'budget')}"] if "budget" in step else []
        args.append(action)
        if "args" in step:
            args.append("--args=" + dumps_json(step["args"], ascii_only=True))
        if ctx is not None:
            args.append(f"--at={ctx}")
        text = dumps_json(query, ascii_only=True)
        if text.startswith("@") or text == "-" or len(text) > 100_000:
            assert self.tmpdir is not None
            query_file = os.path.join(self.tmpdir, f"query-{self.invocations}.json")
            with open(query_file, "w", encoding="utf-8") as handle:
                handle.write(text)
            text = "@" + query_file
        return [*args, *_positionals([text])]

    def _search_args(self, value: Any) -> list[str]:
        """``search`` options as CLI flags; what the CLI cannot say (a non-integer k, a filter
        list that is not an array) is not expressible there."""
        if not isinstance(value, dict):
            raise NotExpressible("search takes an object of keyword arguments")
        args = ["search"]
        for key, option in value.items():
            if key in ("text", "vector_attribute"):
                args.append(f"--{key.replace('_', '-')}={_text_arg(option, key)}")
            elif key in ("k", "expand"):
                args.append(f"--{key}={_int_arg(option, key)}")
            elif key == "vector":
                args.append(f"--vector={dumps_json(option, ascii_only=True)}")
            elif key == "filters" and isinstance(option, list):
                args.extend(f"--filter={dumps_json(pair, ascii_only=True)}" for pair in option)
            elif key == "text_attributes" and isinstance(option, list):
                args.extend(f"--text-attribute={_text_arg(name, 'text attribute')}" for name in option)
            else:
                raise NotExpressible(f"search option {key}={_short(option)} has no CLI form")
        return args

    def _schema_args(self, value: Any) -> list[str]:
        if not isinstance(value, dict) or set(value) - {"prefix", "include_system"}:
            raise NotExpressible("schema takes prefix and include_system")
        args = ["schema"]
        if value.get("include_system") is True:
            args.append("--system")
        elif value.get("include_system") not in (None, False):
            raise NotExpressible("include_system must be a boolean on the CLI")
        if value.get("prefix") not in (None, ""):
            args.extend(_positionals([_text_arg(value["prefix"], "prefix")]))
        return args

    def _shape_args(self, value: Any) -> list[str]:
        if not isinstance(value, dict) or "name" not in value:
            raise NotExpressible("shape takes an object with a name")
        args = ["shape"]
        for key, option in value.items():
            if key in ("required", "allowed"):
                if not isinstance(option, list):
                    raise NotExpressible(f"shape {key} must be a list on the CLI")
                args += [f"--{key}={_text_arg(a, key)}" for a in option]
            elif key == "closed":
                if not isinstance(option, bool):
                    raise NotExpressible("shape closed must be a boolean on the CLI")
                args.append("--closed" if option else "--open")
            elif key == "operation_id":
                args.append(f"--operation-id={_text_arg(option, 'operation_id')}")
            elif key == "if_basis_tx":
                args.append(f"--if-basis-tx={_int_arg(option, 'if_basis_tx')}")
            elif key != "name":
                raise NotExpressible(f"shape option {key!r} has no CLI form")
        return [*args, *_positionals([_text_arg(value["name"], "shape name")])]

    def _datoms_args(self, value: Any, ctx: Any) -> list[str]:
        if ctx is not None:
            raise NotExpressible("datoms has no --at")
        if not isinstance(value, dict):
            raise NotExpressible("datoms takes an object of options")
        args = ["datoms"]
        for key, option in value.items():
            if key == "components":
                args.append("--components=" + dumps_json(option, ascii_only=True))
            elif key == "source":
                args.append(f"--source={_text_arg(option, 'source')}")
            elif key == "limit":
                args.append(f"--limit={_int_arg(option, 'limit')}")
            elif key == "cursor":
                args.append(f"--cursor={_text_arg(option, 'cursor')}")
            elif key != "index":
                raise NotExpressible(f"datoms option {key!r} has no CLI form")
        if "index" in value:
            args.extend(_positionals([_text_arg(value["index"], "index")]))
        return args

    def _excise_args(self, value: dict[str, Any]) -> list[str]:
        # both options are required on the CLI (07 §2): without them the step is library-only
        if "operation_id" not in value or "if_basis_tx" not in value:
            raise NotExpressible("excise needs --operation-id and --if-basis-tx on the CLI")
        return ["excise", f"--operation-id={_text_arg(value['operation_id'], 'operation_id')}",
                f"--if-basis-tx={_int_arg(value['if_basis_tx'], 'if_basis_tx')}",
                *_positionals([_ref_arg(value["ref"])])]

    def _add_args(self, data: Any, options: dict[str, Any]) -> list[str]:
        args = ["add"]
        for key, option in options.items():
            if key == "operation_id":
                args.append(f"--operation-id={_text_arg(option, 'operation_id')}")
            elif key == "if_basis_tx":
                args.append(f"--if-basis-tx={_int_arg(option, 'if_basis_tx')}")
            else:
                raise NotExpressible(f"transact option {key!r} has no CLI form")
        # ASCII-only JSON text: no raw separators or control characters in argv.
        text = dumps_json(data, ascii_only=True)
        if len(text) > 100_000:
            assert self.tmpdir is not None
            data_file = os.path.join(self.tmpdir, f"data-{self.invocations}.json")
            with open(data_file, "w", encoding="utf-8") as handle:
                handle.write(text)
            args.append("@" + data_file)
        elif text.startswith("@") or text == "-":
            raise NotExpressible("data text would be read as a file name")
        else:
            args.extend(_positionals([text]))
        return args

    def _declare_args(self, value: dict[str, Any]) -> list[str]:
        rest = dict(value)
        attr = _text_arg(rest.pop("attr", None), "attribute")
        args = ["declare"]
        for key, option in rest.items():
            if key == "type":
                args.append(f"--type={_text_arg(option, 'type')}")
            elif key in ("ref", "many", "unique", "nohistory"):
                if option is None:
                    continue
                if not isinstance(option, bool):
                    raise NotExpressible(f"declare {key}={_short(option)} is not a boolean")
                if key == "ref":
                    args.append("--ref" if option else "--no-ref")
                elif key == "many":
                    args.append("--many" if option else "--one")
                elif key == "unique":
                    args.append("--unique" if option else "--not-unique")
                else:
                    args.append("--nohistory" if option else "--history")
            elif key == "dims":
                if option is None:
                    continue
                args.append(f"--dims={_int_arg(option, 'dims')}")
            elif key in ("doc", "vector_model", "operation_id"):
                if option is None:
                    continue
                flag = "--" + key.replace("_", "-")
                args.append(f"{flag}={_text_arg(option, key)}")
            elif key == "if_basis_tx":
                args.append(f"--if-basis-tx={_int_arg(option, 'if_basis_tx')}")
            else:
                raise NotExpressible(f"declare option {key!r} has no CLI form")
        args.extend(_positionals([attr]))
        return args

    def _undo_args(self, value: dict[str, Any]) -> list[str]:
        rest = dict(value)
        target = _int_arg(rest.pop("target", None), "undo target")
        args = ["undo"]
        for key, option in rest.items():
            if key == "operation_id":
                args.append(f"--operation-id={_text_arg(option, 'operation_id')}")
            elif key == "if_basis_tx":
                args.append(f"--if-basis-tx={_int_arg(option, 'if_basis_tx')}")
            else:
                raise NotExpressible(f"undo option {key!r} has no CLI form")
        args.extend(_positionals([target]))
        return args

    def _facts(self) -> list[list[Any]]:
        assert self.path is not None
        uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
        try:
            import apsw  # noqa: PLC0415 - lazy: only this step needs it
        except ImportError:
            import sqlite3  # noqa: PLC0415

            connection = sqlite3.connect(uri, uri=True)
            try:
                return _facts_rows(connection)
            finally:
                connection.close()
        connection = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        try:
            return _facts_rows(connection)
        finally:
            connection.close()

    def normalize(self, action: str, expected: Any, actual: Any) -> tuple[Any, Any]:
        if action == "stats" and isinstance(expected, dict) and isinstance(actual, dict):
            expected = {k: v for k, v in expected.items() if k not in self.IGNORED_STATS_KEYS}
            actual = {k: v for k, v in actual.items() if k not in self.IGNORED_STATS_KEYS}
        return expected, actual


# --------------------------------------------------------------------------
# Case discovery


def case_files(root: str | os.PathLike[str]) -> list[Path]:
    """Every ``*.json`` case under ``root``, sorted by relative path."""
    base = Path(root)
    if not base.is_dir():
        return []
    return sorted(base.rglob("*.json"), key=lambda p: p.relative_to(base).as_posix())
