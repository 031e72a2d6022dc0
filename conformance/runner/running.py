"""Running a case on one adapter: steps in order, views nested, outcomes matched (11 §2); and the
unmatched walk that ``derive.py`` records expectations with."""

from __future__ import annotations

from typing import Any, Callable

from .adapter import Adapter
from .cases import LATER_READS, PARTIAL_WRITES, WRITE_ACTIONS, step_action, subset_skip_reason
from .matching import match, ordered_query, rows_as_multiset, shorten
from .outcomes import CaseFailure, CaseReport, CaseSkipped, NotExpressible, RuntimeCrash, StepError


def run_case(case: dict[str, Any], adapter: Adapter) -> CaseReport:
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
    return shorten({k: v for k, v in step.items() if k not in ("steps", "expect")}, 400)


def _step_call(adapter: Adapter, ctx: Any, action: str, step: dict[str, Any]) -> Callable[[], Any]:
    if action == "at":
        return lambda: adapter.view(ctx, step["at"], step)
    return lambda: adapter.perform(ctx, action, step)


def _run_steps(steps: list[dict[str, Any]], adapter: Adapter, ctx: Any, path: str,
               report: CaseReport) -> None:
    for index, step in enumerate(steps):
        where = f"{path}[{index}]"
        action = step_action(step)
        if action in LATER_READS:
            report.skipped.append(f"{where}: later read step {action!r}")
            continue
        try:
            kind, value = _attempt(_step_call(adapter, ctx, action, step), where, step)
        except NotExpressible as exc:
            if action in WRITE_ACTIONS and ("error" not in step or action in PARTIAL_WRITES):
                # Every later step may depend on this write: the case cannot run here.
                raise CaseSkipped(f"{adapter.label} cannot express {where} ({exc.args[0]})") from None
            # A read, or a write that must fail (a failing write changes nothing, 08 §2).
            report.skipped.append(f"{where}: {exc.args[0]}")
            continue
        report.ran += 1
        if "error" in step:
            _check_error(step, where, kind, value)
        elif kind == "error":
            raise CaseFailure(f"{where} {_describe(step)}: unexpected error {value}")
        elif action == "at":
            _run_steps(step.get("steps", []), adapter, value, f"{where}.steps", report)
        elif "expect" in step:
            _check_result(adapter, action, step, where, value)


def _check_error(step: dict[str, Any], where: str, kind: str, value: Any) -> None:
    if kind == "ok":
        raise CaseFailure(f"{where} {_describe(step)}: expected {step['error']}, "
                          f"got a result: {shorten(value)}")
    if value.name != step["error"]:
        raise CaseFailure(f"{where} {_describe(step)}: expected {step['error']}, got {value}")


def _check_result(adapter: Adapter, action: str, step: dict[str, Any], where: str, value: Any) -> None:
    expected, actual = adapter.normalize(action, step["expect"], value)
    if action == "q" and not ordered_query(step["q"]):
        expected, actual = rows_as_multiset(expected, actual)
    problems = match(expected, actual)
    if problems:
        listed = "\n  ".join(problems[:20])
        raise CaseFailure(f"{where} {_describe(step)}: result does not match:\n  {listed}"
                          f"\nactual: {shorten(actual, 2000)}")


def _attempt(call: Callable[[], Any], where: str, step: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except StepError as exc:
        return "error", exc
    except RuntimeCrash as exc:
        raise CaseFailure(f"{where} {_describe(step)}: runtime crashed: {exc}") from exc


def perform_raw(case: dict[str, Any], adapter: Adapter,
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
        try:
            outcome: tuple[str, Any] = ("ok", _step_call(adapter, ctx, action, step)())
        except StepError as exc:
            outcome = ("error", exc.name)
        visit(step, where, outcome)
        if action == "at" and outcome[0] == "ok":
            _perform_steps(step.get("steps", []), adapter, outcome[1], f"{where}.steps", visit)
