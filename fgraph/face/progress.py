"""Progress for long commands, drawn with ``rich`` on stderr only when stderr is a terminal:
piped or captured output never carries a progress bar or its escape codes."""

from __future__ import annotations

import contextlib
import sys


class _Silent:
    def advance(self, steps: int = 1) -> None:
        pass

    def update(self, completed: int) -> None:
        pass


class _Bar:
    def __init__(self, progress, task):
        self._progress, self._task = progress, task

    def advance(self, steps: int = 1) -> None:
        self._progress.advance(self._task, steps)

    def update(self, completed: int) -> None:
        self._progress.update(self._task, completed=completed)


@contextlib.contextmanager
def progress(label: str, *, total: int | None = None, unit: str = "items", stream=None):
    """``with progress("applying", unit="events") as bar: bar.advance()``; silent off a terminal."""
    stream = sys.stderr if stream is None else stream
    if not _is_terminal(stream):
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn() if total else TextColumn(""),
               MofNCompleteColumn() if total else TextColumn("{task.completed:,} " + unit),
               TimeElapsedColumn()]
    with Progress(*columns, console=Console(file=stream), transient=True) as bars:
        yield _Bar(bars, bars.add_task(label, total=total))


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
