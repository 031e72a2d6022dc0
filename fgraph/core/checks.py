"""The one strict-integer check: an argument or a stream field that must be an integer, perhaps
within bounds.

Python's ``True`` is an ``int`` and JSON's ``true`` arrives as one, so ``isinstance(x, int)``
alone would take ``true`` for 1; every integer fgraph accepts goes through ``is_strict_int`` or
``strict_int`` instead (``tests/core/test_checks.py`` greps the package for hand-written copies).

A number of seconds (a poll interval) is checked the same way by ``positive_number``: an ``int``
or a ``float``, never a ``bool``, finite and above zero.

Each caller keeps its own words: the message and hint are templates formatted only when the check
fails (``{value!r}``, ``{low}`` and ``{high}``; a literal brace is doubled), and ``error`` is the
class or factory that makes the error (a stream reader's factory that adds its line, say), so the
messages tests and the conformance cases compare stay exactly as they were.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from fgraph.core.errors import FgraphError, ValueTypeError


def is_strict_int(value: object) -> bool:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def strict_int(value: object, message: str, hint: str | None = None, *, low: int | None = None,
               high: int | None = None, error: Callable[..., FgraphError] = ValueTypeError) -> int:
    """``value`` when it is an integer (not a bool) from ``low`` through ``high`` (either bound
    may be None: unbounded); else raises ``error(message, hint)`` (``error(message)`` without a
    hint), the templates formatted with the value and the bounds."""
    if (isinstance(value, int) and not isinstance(value, bool) and (low is None or value >= low)
            and (high is None or value <= high)):
        return value
    fields = {"value": value, "low": low, "high": high}
    text = message.format(**fields)
    raise error(text) if hint is None else error(text, hint.format(**fields))


def optional_int(value: object, message: str, hint: str | None = None, *, low: int | None = None,
                 high: int | None = None, error: Callable[..., FgraphError] = ValueTypeError) -> int | None:
    """``strict_int`` for an argument that may be left out: None passes as it is."""
    if value is None:
        return None
    return strict_int(value, message, hint, low=low, high=high, error=error)


def positive_number(value: object, message: str, hint: str | None = None, *,
                    error: Callable[..., FgraphError] = ValueTypeError) -> float:
    """``value`` when it is an ``int`` or a ``float`` (not a bool), finite and above zero (a
    number of seconds); else raises ``error(message, hint)`` as ``strict_int`` does, the templates
    formatted with ``{value!r}``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return value
    text = message.format(value=value)
    raise error(text) if hint is None else error(text, hint.format(value=value))
