"""Derive (or check) case expectations from a runtime's Python library (spec 11 §6).

Fill mode — record what the published runtime does for every step that has
neither ``expect`` nor ``error``, and write the case back::

    $(../shared/tools/refpeer --python) conformance/derive.py conformance/cases/area/name.json

Hand-written ``expect``/``error`` members are kept. Fill mode refuses to run on
anything but the published runtime (``fgraph.__version__ == "1.2.0"``) unless
``--any-runtime`` is given.

Check mode — run cases (files or folders) on the library and report::

    $(../shared/tools/refpeer --python) conformance/derive.py --check conformance/cases
    .venv/bin/python conformance/derive.py --check conformance/cases   # this runtime

Output files use 2-space indentation, ``ensure_ascii=False``, a fixed key order
for cases and steps, sorted keys inside expectations, and short arrays/objects
kept on one line. Streams (the value of ``apply``/``restore``, the expectation of
``events``/``snapshot``) are written one record per line.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PUBLISHED_VERSION = "1.2.0"


def _load_runner():
    name = "fgraph_conformance_runner"
    if name in sys.modules:
        return sys.modules[name]
    package = HERE / "runner"
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)])
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


runner = _load_runner()

STEP_KEY_ORDER = ["options", "depth", "args", "steps", "expect", "error"]
CASE_KEY_ORDER = ["name", "comment", "steps"]
WIDTH = 120


# --------------------------------------------------------------------------
# Formatting


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


class _Rows(list):
    """A stream (NDJSON records) in a case file: one record per line, whatever its width."""


#: actions whose value is a stream of records (``apply``/``restore``) and whose
#: expectation is one (``events``/``snapshot``)
STREAM_VALUES = ("apply", "restore")
STREAM_RESULTS = ("events", "snapshot")


def _order_step(step: dict[str, Any]) -> dict[str, Any]:
    action = runner.step_action(step)
    value = step[action]
    if action in STREAM_VALUES and isinstance(value, list):
        value = _Rows(value)
    out: dict[str, Any] = {action: value}
    for key in STEP_KEY_ORDER:
        if key not in step:
            continue
        if key == "steps":
            out[key] = [_order_step(s) for s in step[key]]
        elif key == "expect":
            out[key] = _sorted_keys(step[key])
            if action in STREAM_RESULTS and isinstance(out[key], list):
                out[key] = _Rows(out[key])
        else:
            out[key] = step[key]
    for key in step:  # anything else, kept (validate_case rejects unknown keys anyway)
        out.setdefault(key, step[key])
    return out


def order_case(case: dict[str, Any]) -> dict[str, Any]:
    out = {key: case[key] for key in CASE_KEY_ORDER if key in case and key != "steps"}
    out["steps"] = [_order_step(s) for s in case["steps"]]
    for key in case:
        out.setdefault(key, case[key])
    return out


def _one_line(value: Any) -> str:
    return runner.dumps_json(value, separators=(", ", ": "))


def dump(value: Any, indent: int = 0, used: int = 0) -> str:
    """2-space indented JSON; a container stays on one line when it fits."""
    if isinstance(value, _Rows) and value:
        pad = " " * (indent + 2)
        return ("[\n" + ",\n".join(pad + _one_line(item) for item in value) + "\n"
                + " " * indent + "]")
    flat = _one_line(value)
    if not isinstance(value, (dict, list)) or not value or indent + used + len(flat) <= WIDTH:
        return flat
    if isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value):
        return flat  # a row of scalars stays on one line
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            head = runner.dumps_json(str(key)) + ": "
            items.append(pad + head + dump(item, indent + 2, len(head)))
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dump(item, indent + 2, 0) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def write_case(path: Path, case: dict[str, Any]) -> None:
    text = dump(order_case(case)) + "\n"
    runner.loads_strict(text)  # must stay loadable
    path.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------
# Fill and check


def fill(path: Path, fgraph: Any, cli: str | None = None) -> int:
    """Fill missing expectations of one case; returns the number of steps filled."""
    case = runner.load_case(path)
    reason = runner.subset_skip_reason(case)
    if reason:
        print(f"SKIP {path}: {reason}")
        return 0
    filled = 0

    def visit(step: dict[str, Any], where: str, outcome: Any) -> None:
        nonlocal filled
        if outcome is None or "expect" in step or "error" in step:
            return
        kind, value = outcome
        if kind == "error":
            step["error"] = value
            step.pop("steps", None)
            filled += 1
        elif "at" not in step:
            step["expect"] = value
            filled += 1

    adapter = runner.CliAdapter(cli, label="peer") if cli else runner.LibraryAdapter(fgraph)
    runner.perform_raw(case, adapter, visit)
    runner.validate_case(case)
    write_case(path, case)
    return filled


def is_divergent(path: Path) -> bool:
    """Cases under a ``divergent`` folder record where this runtime knowingly differs."""
    return "divergent" in path.resolve().parts


def check(path: Path, fgraph: Any, *, verbose: bool) -> str:
    if is_divergent(path) and getattr(fgraph, "__version__", None) == PUBLISHED_VERSION:
        return f"SKIP {path}: divergent case (the published runtime is known to differ)"
    case = runner.load_case(path)
    try:
        report = runner.run_case(case, runner.LibraryAdapter(fgraph))
    except runner.CaseSkipped as exc:
        return f"SKIP {path}: {exc}"
    except runner.CaseFailure as exc:
        return f"FAIL {path}: {exc}"
    line = f"PASS {path} ({report.ran} steps"
    if report.skipped:
        line += f", {len(report.skipped)} skipped"
        if verbose:
            line += ": " + "; ".join(report.skipped)
    return line + ")"


def expand(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for item in paths:
        p = Path(item)
        out.extend(runner.case_files(p) if p.is_dir() else [p])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="case files or folders")
    parser.add_argument("--check", action="store_true", help="only run and report")
    parser.add_argument("--any-runtime", action="store_true",
                        help="allow filling from a runtime other than fgraph 1.2.0")
    parser.add_argument("--cli", metavar="EXECUTABLE",
                        help="fill from the published runtime's CLI instead of its library (for CLI-only "
                             "steps such as batch), e.g. ../shared/tools/refpeer")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)

    import fgraph  # the library of the Python running this script

    version = getattr(fgraph, "__version__", "?")
    files = expand(args.paths)
    if args.check:
        counts = {"PASS": 0, "SKIP": 0, "FAIL": 0}
        for path in files:
            try:
                line = check(path, fgraph, verbose=args.verbose)
            except Exception:  # noqa: BLE001 - report and go on
                line = f"FAIL {path}: runner error\n{traceback.format_exc()}"
            counts[line[:4]] += 1
            print(line)
        print(f"fgraph {version}: {counts['PASS']} passed, {counts['SKIP']} skipped, "
              f"{counts['FAIL']} failed")
        return 1 if counts["FAIL"] else 0
    if version != PUBLISHED_VERSION and not args.any_runtime and not args.cli:
        print(f"derive.py: refusing to fill expectations from fgraph {version}; run it with "
              f"$(../shared/tools/refpeer --python) or pass --any-runtime", file=sys.stderr)
        return 2
    for path in files:
        if is_divergent(path):
            print(f"{path}: divergent case, expectations are written by hand; not filled")
            continue
        filled = fill(path, fgraph, args.cli)
        if args.cli:
            case = runner.load_case(path)
            try:
                runner.run_case(case, runner.CliAdapter(args.cli, label="peer"))
                verdict = "PASS"
            except (runner.CaseFailure, runner.CaseSkipped) as exc:
                verdict = f"{type(exc).__name__}: {exc}"
            print(f"{path}: filled {filled} step(s) from {args.cli}; check: {verdict}")
            continue
        print(f"{path}: filled {filled} step(s); check: {check(path, fgraph, verbose=False)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
