"""Progress for long commands, drawn with ``rich`` on stderr only when stderr is a terminal:
piped or captured output never carries a progress bar or its escape codes.

The display is transient: a command leaves its ``with progress(...)`` block before it prints
its result, so the last frame is erased and the result starts on a line of its own at column 0
(issue 31). Counts are in the unit a person thinks in (events, records, lines; bytes as kB/MB),
each phase is named after the label (``backing up: verifying``) and drawn at once, and a phase
of unknown length shows the spinner and the elapsed time, never a bar frozen at its last value.
"""

from __future__ import annotations

import contextlib
import os
import sys


class _Silent:
    """The bar off a terminal: counts nothing, draws nothing."""

    def advance(self, steps: int = 1) -> None:
        pass

    def update(self, completed: int) -> None:
        pass

    def count(self, items: int = 1) -> None:
        pass

    def phase(self, name: str, *, total: int | None = None, unit: str | None = None,
              size_bytes: int | None = None) -> None:
        pass

    def stage(self, name: str, size_bytes: int | None = None) -> None:
        pass


class _Bar:
    """One task of a rich progress display: ``completed`` in ``unit`` (of ``total`` when known, the
    only case with a bar), a second counter of ``items`` (events read beside the bytes), a size."""

    def __init__(self, progress, task, label: str):
        self._progress, self._task, self._label = progress, task, label
        self._items = 0

    def advance(self, steps: int = 1) -> None:
        self._progress.advance(self._task, steps)

    def update(self, completed: int) -> None:
        self._progress.update(self._task, completed=completed)

    def count(self, items: int = 1) -> None:
        self._items += items
        self._progress.update(self._task, items=self._items)

    def phase(self, name: str, *, total: int | None = None, unit: str | None = None,
              size_bytes: int | None = None) -> None:
        """Enter the phase ``name``, drawn at once after the label. A new ``unit`` restarts the count
        at 0 (of ``total``, with a bar, when known); without one the count goes on, barless."""
        fields = {"size": total, "size_bytes": size_bytes}
        if unit is not None:
            fields.update(unit=unit, completed=0)
        self._progress.update(self._task, description=f"{self._label}: {name}", refresh=True, **fields)

    def stage(self, name: str, size_bytes: int | None = None) -> None:
        """A phase of unknown length over ``size_bytes`` (the ``on_phase`` callback of the library)."""
        self.phase(name, unit="", size_bytes=size_bytes)


def measure(fields: dict, completed: float) -> str:
    """The counts of a task as text: ``4.2 MB of 11.7 MB · 1,234 events``, ``300/2,000 records``."""
    from rich.filesize import decimal
    unit, size, parts = fields.get("unit", ""), fields.get("size"), []
    if unit == "bytes":
        parts.append(decimal(int(completed)) + (f" of {decimal(int(size))}" if size else ""))
    elif unit:
        parts.append(f"{int(completed):,}" + (f"/{int(size):,}" if size else "") + f" {unit}")
    if fields.get("items_unit"):
        parts.append(f"{fields.get('items', 0):,} {fields['items_unit']}")
    if fields.get("size_bytes") is not None:
        parts.append(decimal(int(fields["size_bytes"])))
    return " · ".join(parts)


def _columns():
    """The display's columns; rich is imported only when something is drawn (start-up stays light)."""
    from rich.progress import ProgressBar, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class Gauge(ProgressColumn):
        """A bar only while the phase's total is known."""

        def render(self, task):
            size = task.fields.get("size")
            if not size:
                return Text("")
            return ProgressBar(total=size, completed=min(task.completed, size), width=30)

    class Counts(ProgressColumn):
        """The counts in their units (``measure``)."""

        def render(self, task):
            return Text(measure(task.fields, task.completed))

    return [SpinnerColumn(), TextColumn("{task.description}"), Gauge(), Counts(), TimeElapsedColumn()]


@contextlib.contextmanager
def progress(label: str, *, total: int | None = None, unit: str = "items", items: str | None = None,
             stream=None, enabled: bool = True):
    """``with progress("applying", unit="events") as bar: bar.advance()``; silent off a terminal
    (or when not ``enabled``). ``unit="bytes"`` counts bytes (shown as kB/MB); ``items`` names a
    second counter (``bar.count()``). Leave the block before printing the result: the display is
    erased when it ends."""
    stream = sys.stderr if stream is None else stream
    if not enabled or not is_terminal(stream):
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import Progress
    with Progress(*_columns(), console=Console(file=stream), transient=True, redirect_stdout=False,
                  redirect_stderr=False) as bars:
        # rich's own total stays None (a task never "finishes", so spinner and clock keep going);
        # the bar's size is the field ``size``
        task = bars.add_task(label, total=None, size=total, unit=unit, items=0, items_unit=items, size_bytes=None)
        yield _Bar(bars, task, label)


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal a person reads (the one test behind every display)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _CountingReader:
    """A binary handle that advances a progress bar by the bytes read through it and counts its
    lines; at the end of the input the display enters the phase ``then`` (what follows the reading:
    committing, verifying). Every other attribute (``name`` decides how a non-UTF-8 file is
    reported) is the handle's own."""

    def __init__(self, handle, bar, then: str | None):
        self._handle, self._bar, self._then = handle, bar, then
        self._open_line = False  # the last bytes read end inside a line

    def readline(self, size: int = -1) -> bytes:
        return self._seen(self._handle.readline(size))

    def read(self, size: int = -1) -> bytes:
        return self._seen(self._handle.read(size))

    def _seen(self, data: bytes) -> bytes:
        if data:
            self._bar.advance(len(data))
            ends = data.count(b"\n")
            if ends:
                self._bar.count(ends)
            self._open_line = not data.endswith(b"\n")
        elif self._then is not None:
            if self._open_line:
                self._bar.count()
            self._bar.phase(self._then)
            self._then = None
        return data

    def __iter__(self):
        return iter(self.readline, b"")

    def __getattr__(self, name):
        return getattr(self._handle, name)


@contextlib.contextmanager
def reading(handle, label: str, *, items: str = "lines", then: str | None = None, stream=None):
    """``handle`` wrapped so that reading it draws a bar in bytes (sized by the file when it has
    one) and a count of its lines as ``items``; at its end the phase ``then`` is shown."""
    stream = sys.stderr if stream is None else stream
    if not is_terminal(stream):
        yield handle
        return
    try:
        total = os.fstat(handle.fileno()).st_size or None
    except (AttributeError, OSError, ValueError):
        total = None
    with progress(label, total=total, unit="bytes", items=items, stream=stream) as bar:
        yield _CountingReader(handle, bar, then)


def on_terminal(stream=None) -> bool:
    """Whether progress would be drawn on ``stream`` (stderr by default)."""
    return is_terminal(sys.stderr if stream is None else stream)


class _NeverATerminal:
    """Where progress goes when the output itself is on the terminal: nowhere."""

    def isatty(self) -> bool:
        return False


def beside(output):
    """The stream for progress about ``output``: stderr, unless ``output`` is the terminal itself
    (a snapshot printed on screen must not be drawn over)."""
    return _NeverATerminal() if is_terminal(output) else sys.stderr


def counted(lines, bar):
    """``lines`` passed through, one ``bar.advance()`` each."""
    for line in lines:
        bar.advance()
        yield line
