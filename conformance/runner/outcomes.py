"""What a step or a case can come to: the exceptions the runner raises and its report."""

from __future__ import annotations

from dataclasses import dataclass, field


class CaseFormatError(ValueError):
    """The case file itself is malformed."""


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
