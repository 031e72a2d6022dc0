"""The one error hierarchy: a base class and the nine stable names of the contract.

Messages say what went wrong and what to try next. Classes whose contract name
collides with a Python built-in are named differently; ``name`` carries the
contract name, which is all that conformance cases, the CLI and peers compare.
"""

from __future__ import annotations


class FgraphError(Exception):
    """Base of every error fgraph raises on purpose."""

    name = "FgraphError"
    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.line: int | None = None   # the stream line it concerns (apply, restore, verify)

    def at_line(self, number: int) -> "FgraphError":
        """This error located at stream line ``number``; an error already located keeps its line."""
        if self.line is not None:
            return self
        located = type(self)(f"line {number}: {self.message}", self.hint)
        located.line = number
        return located

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}; {self.hint}"
        return self.message


class NotFound(FgraphError):


    """An entity, attribute, transaction or file that the request names does not exist."""
    name = "NotFound"


class Conflict(FgraphError):


    """The request contradicts the current state: a stale basis, a taken unique value, a reused operation id."""
    name = "Conflict"


class SchemaError(FgraphError):


    """An attribute name or declaration is invalid, or data contradicts a declaration."""
    name = "SchemaError"


class ValueTypeError(FgraphError):


    """A value or argument has the wrong type or shape (contract name ``TypeError``)."""
    name = "TypeError"


class QueryError(FgraphError):


    """A query or read argument is malformed."""
    name = "QueryError"


class FormatError(FgraphError):
    """A file is not (or no longer) a sound format-v2 database or stream."""
    name = "FormatError"


def rewrap(error: FgraphError, message: str | None = None, *, before: str = "", after: str = "",
           hint: str | None = None) -> FgraphError:
    """``error`` told again where the caller knows more (the input line, the path, what was rolled
    back): the same class, so its contract name stays; the message ``before + message + after``,
    ``message`` being the error's own unless given; the error's hint unless ``hint`` is given.
    Raise it ``from error``, so the traceback keeps where it came from."""
    return type(error)(before + (error.message if message is None else message) + after,
                       error.hint if hint is None else hint)


DAMAGE_ADVICE = "run `fgraph doctor` to list the damage, then restore from a verified backup or snapshot"


def damaged(what: str, *, after: str = "") -> FormatError:
    """The error of a read that met what only a damaged page makes (``what`` says what it met)."""
    return FormatError(f"{what}: the file is damaged", DAMAGE_ADVICE + after)


class ReadOnly(FgraphError):


    """A write was attempted through a read-only database or view."""
    name = "ReadOnly"


class TooLarge(FgraphError):


    """A value, event, line or work budget is over its cap."""
    name = "TooLarge"


class Unsupported(FgraphError):


    """The operation is not available here (system entities, historical views, later features)."""
    name = "Unsupported"


ERROR_CLASSES: dict[str, type[FgraphError]] = {
    cls.name: cls
    for cls in (NotFound, Conflict, SchemaError, ValueTypeError, QueryError,
                FormatError, ReadOnly, TooLarge, Unsupported)
}

# The contract name ``TypeError`` is exported under this alias too, for callers
# who think in contract names; it is not Python's built-in TypeError.
FgraphTypeError = ValueTypeError
