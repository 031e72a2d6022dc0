"""Matching a result against a case's expectation (spec 11 §2.1)."""

from __future__ import annotations

import json
from typing import Any

from .outcomes import CaseFormatError


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


def shorten(value: Any, limit: int = 300) -> str:
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
            return [f"{path}: expected an object, got {shorten(actual)}"]
        problems: list[str] = []
        open_object = expected.get("...") is True
        for key, want in expected.items():
            if key == "..." and want is True:
                continue
            if key not in actual:
                problems.append(f"{path}.{key}: missing (expected {shorten(want)})")
            else:
                problems.extend(match(want, actual[key], f"{path}.{key}"))
        if not open_object:
            for key in actual:
                if key not in expected:
                    problems.append(f"{path}.{key}: unexpected key (value {shorten(actual[key])})")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected an array, got {shorten(actual)}"]
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} items, got {len(actual)}: {shorten(actual)}"]
        problems = []
        for index, (want, got) in enumerate(zip(expected, actual)):
            problems.extend(match(want, got, f"{path}[{index}]"))
        return problems
    if isinstance(expected, bool) or isinstance(actual, bool):
        if type(expected) is not type(actual) or expected != actual:
            return [f"{path}: expected {shorten(expected)}, got {shorten(actual)}"]
        return []
    if isinstance(expected, (int, float)):
        if not isinstance(actual, (int, float)) or expected != actual:
            return [f"{path}: expected {shorten(expected)}, got {shorten(actual)}"]
        return []
    if expected is None:
        return [] if actual is None else [f"{path}: expected null, got {shorten(actual)}"]
    if isinstance(expected, str):
        if not isinstance(actual, str) or expected != actual:
            return [f"{path}: expected {shorten(expected)}, got {shorten(actual)}"]
        return []
    raise CaseFormatError(f"{path}: expectation of type {type(expected).__name__}")


def ordered_query(query: Any) -> bool:
    """A ``q`` with a non-empty ``order`` compares its rows in order; any other as a multiset."""
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
