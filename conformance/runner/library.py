"""Driving a Python library with the 11 §3 surface in-process, on ``:memory:``.

Each action is one entry of :data:`LIBRARY_STEPS`: a function of the adapter, the view, the
action's value and the whole step. Most are one library call whose result is turned into JSON.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from .adapter import Adapter, excise_report, facts_rows, ref_args
from .cases import CLOCK_STEP, ERROR_NAMES, EVENT_SEED, GENESIS_AT
from .encoding import parse_ndjson, stream_text
from .matching import to_jsonable
from .outcomes import CaseFormatError, NotExpressible, RuntimeCrash, StepError


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
            self.db = self.call(lambda: self.module.connect(":memory:", clock=self.make_clock()))
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

    def call(self, fn: Callable[[], Any]) -> Any:
        """``fn()``, a typed fgraph error raised as StepError and anything else as RuntimeCrash."""
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
        return self.call(lambda: ctx.at(value))

    def perform(self, ctx: Any, action: str, step: dict[str, Any]) -> Any:
        handler = LIBRARY_STEPS.get(action)
        if handler is None:
            raise NotExpressible(f"action {action!r} is not supported by this runner")
        return handler(self, ctx, step[action], step)

    def connection(self) -> Any:
        connection = getattr(self.db, "connection", None)
        return self.db._connection if connection is None else connection


Handler = Callable[[LibraryAdapter, Any, Any, dict], Any]


def _calling(invoke: Callable[[Any, Any, dict], Any]) -> Handler:
    """A step that is one library call, ``invoke(view, value, step)``, answered as JSON."""
    def handler(adapter: LibraryAdapter, ctx: Any, value: Any, step: dict) -> Any:
        return to_jsonable(adapter.call(lambda: invoke(ctx, value, step)))
    return handler


def _without(value: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != key}


def _facts(adapter: LibraryAdapter, ctx: Any, value: Any, step: dict) -> Any:
    return facts_rows(adapter.connection())


def _query(adapter: LibraryAdapter, ctx: Any, value: Any, step: dict) -> Any:
    if "budget" in step:
        raise NotExpressible("a work budget is a handle option (connect(query_budget=N))")
    return to_jsonable(adapter.call(lambda: ctx.q(value, step.get("args"))))


def _search(adapter: LibraryAdapter, ctx: Any, value: Any, step: dict) -> Any:
    if not isinstance(value, dict):
        raise NotExpressible("search takes an object of keyword arguments")
    return to_jsonable(adapter.call(lambda: ctx.search(**value)))


def _apply(adapter: LibraryAdapter, ctx: Any, value: Any, step: dict) -> Any:
    text = stream_text(value)
    return to_jsonable(adapter.call(lambda: ctx.apply_summary(text)))


def _snapshot(adapter: LibraryAdapter, ctx: Any, value: Any, step: dict) -> Any:
    text = adapter.call(lambda: ctx.snapshot())
    if not isinstance(text, str):
        raise RuntimeCrash(f"snapshot() returned {type(text).__name__}, not the stream text")
    try:
        return parse_ndjson(text)
    except (ValueError, CaseFormatError) as exc:
        raise RuntimeCrash(f"snapshot() gave a bad NDJSON stream ({exc})") from None


def _restore(adapter: LibraryAdapter, ctx: Any, value: Any, step: dict) -> Any:
    text = stream_text(value)
    result = adapter.call(lambda: ctx.restore(text))
    if result is None:
        # The published restore() returns None: report the CLI's
        # {"basis_tx", "ok"}, basis_tx read from a no-op transaction's report.
        noop = to_jsonable(adapter.call(lambda: ctx.transact([])))
        return {"basis_tx": noop["basis_tx"], "ok": True}
    return to_jsonable(result)


def _excise(adapter: LibraryAdapter, ctx: Any, value: Any, step: dict) -> Any:
    return excise_report(to_jsonable(adapter.call(lambda: ctx.excise(value["ref"], **_without(value, "ref")))))


def _entity(ctx: Any, value: Any, step: dict) -> Any:
    return ctx.entity(value, depth=step["depth"]) if "depth" in step else ctx.entity(value)


LIBRARY_STEPS: dict[str, Handler] = {
    "facts": _facts,
    "tx": _calling(lambda ctx, value, step: ctx.transact(value, **step.get("options", {}))),
    "declare": _calling(lambda ctx, value, step: ctx.declare(value["attr"], **_without(value, "attr"))),
    "undo": _calling(lambda ctx, value, step: ctx.undo(value["target"], **_without(value, "target"))),
    "receipt": _calling(lambda ctx, value, step: ctx.receipt(value)),
    "entity": _calling(_entity),
    "history": _calling(lambda ctx, value, step: ctx.history(*ref_args(value))),
    "why": _calling(lambda ctx, value, step: ctx.why(*ref_args(value))),
    "diff": _calling(lambda ctx, value, step: ctx.diff(*value)),
    "stats": _calling(lambda ctx, value, step: ctx.stats()),
    "q": _query,
    "explain": _calling(lambda ctx, value, step: ctx.explain(value, step.get("args"))),
    "datoms": _calling(lambda ctx, value, step: ctx.datoms(**value)),
    "schema": _calling(lambda ctx, value, step: ctx.schema(**value)),
    "attributes": _calling(lambda ctx, value, step: ctx.attributes(**value)),
    "validate": _calling(lambda ctx, value, step: ctx.validate(value)),
    "search": _search,
    "schema_manifest": _calling(lambda ctx, value, step: ctx.schema_manifest()),
    "schema_check": _calling(lambda ctx, value, step: ctx.check_schema_manifest(value)),
    "schema_apply": _calling(lambda ctx, value, step: ctx.apply_schema_manifest(
        value["manifest"], **_without(value, "manifest"))),
    "shape": _calling(lambda ctx, value, step: ctx.declare_shape(value["name"], **_without(value, "name"))),
    "events": _calling(lambda ctx, value, step: ctx.event_records(**value)),
    "apply": _apply,
    "snapshot": _snapshot,
    "restore": _restore,
    "excise": _excise,
}
