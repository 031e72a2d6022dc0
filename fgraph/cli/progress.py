"""Progress for long commands, drawn with ``rich`` on stderr only when stderr is a terminal:
piped or captured output never carries a progress bar or its escape codes."""

from __future__ import annotations

import contextlib
import sys


class _Silent:
    """The bar off a terminal: counts nothing, draws nothing."""

    def advance(self, steps: int = 1) -> None:
        pass

    def update(self, completed: int) -> None:
        pass


class _Bar:
    """One task of a rich progress display."""

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
               MofNCompleteColumn() if total else TextColumn("{task.completed:,} " + unit if unit else ""),
               TimeElapsedColumn()]
    with Progress(*columns, console=Console(file=stream), transient=True, redirect_stdout=False,
                  redirect_stderr=False) as bars:
        yield _Bar(bars, bars.add_task(label, total=total))


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _CountingReader:
    """A binary handle that advances a progress bar by the bytes read through it; every other
    attribute (``name`` decides how a non-UTF-8 file is reported) is the handle's own."""

    def __init__(self, handle, bar):
        self._handle, self._bar = handle, bar

    def readline(self, size: int = -1) -> bytes:
        line = self._handle.readline(size)
        self._bar.advance(len(line))
        return line

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self._bar.advance(len(data))
        return data

    def __iter__(self):
        return iter(self.readline, b"")

    def __getattr__(self, name):
        return getattr(self._handle, name)


@contextlib.contextmanager
def reading(handle, label: str, stream=None):
    """``handle`` wrapped so that reading it draws a byte-counting bar (sized by the file when it has one)."""
    stream = sys.stderr if stream is None else stream
    if not _is_terminal(stream):
        yield handle
        return
    try:
        import os
        total = os.fstat(handle.fileno()).st_size or None
    except (AttributeError, OSError, ValueError):
        total = None
    with progress(label, total=total, unit="bytes", stream=stream) as bar:
        yield _CountingReader(handle, bar)


def on_terminal(stream=None) -> bool:
    """Whether progress would be drawn on ``stream`` (stderr by default)."""
    return _is_terminal(sys.stderr if stream is None else stream)


class _NeverATerminal:
    """Where progress goes when the output itself is on the terminal: nowhere."""

    def isatty(self) -> bool:
        return False


def beside(output):
    """The stream for progress about ``output``: stderr, unless ``output`` is the terminal itself
    (a snapshot printed on screen must not be drawn over)."""
    return _NeverATerminal() if _is_terminal(output) else sys.stderr


def counted(lines, bar):
    """``lines`` passed through, one ``bar.advance()`` each."""
    for line in lines:
        bar.advance()
        yield line
