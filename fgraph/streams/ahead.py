"""Apply on two cores: a child process checks the lines ahead while this one plans and writes.

Every line of an event/1 stream is parsed, validated (``apply.parse_line``) and encoded again
for its canonical text before the writer plans it; for a stream written by ``fgraph tail`` the
canonical bytes are the line itself. That work depends on the line alone, so a child process
(``ahead_child``) does it for the next batches while this process plans and commits the current
ones (issue 52 item 1), and answers one flag per line: 1 when the line is a valid record whose
canonical bytes are the line. Such a line is only parsed and hashed here; every other line (flag
0, no answer yet, a line over ``LINE_BYTES``, a child that failed) takes the ordinary path with
its own errors at its own line. The child runs the same functions of the same package (``-P``,
and a child that imported another copy of fgraph answers nothing) on the same bytes, so a flag
saves work without changing an answer; a child that dies, stalls or answers anything but 0 or 1
is no longer asked (tests/streams/test_ahead.py). Restore does not use it: its per-line check
(``restore.parse``) is cheap enough that a child measured no faster (docs/performance.md).

This process never waits for the child (``WAIT_SECONDS``): a batch whose answer has not arrived
is handled here, and its answer dropped when it comes. A stream's first ``START_AFTER`` lines
are handled without a child (a short stream is not worth its start-up); after that, lines are
read ahead at most ``IN_FLIGHT`` batches of ``BATCH_LINES`` lines or ``AHEAD_BATCH_BYTES`` bytes, and
an error raised by the source itself while reading ahead is raised where it would have been:
after every line read before it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import struct
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator

from fgraph.core.canonical import loads

START_AFTER = 2048
BATCH_LINES = 256
AHEAD_BATCH_BYTES = 128 * 1024
LINE_BYTES = 64 * 1024      # longer lines are checked in process (rare, and sent for nothing)
IN_FLIGHT = 4
PIPE_BYTES = 1 << 20        # the child's input pipe is widened to this where the system allows
WAIT_SECONDS = 0.0          # how long a batch waits for its answer (tests wait; apply never does)
# the child answers only when it imports the very package this process runs (checked in ahead_child.main)
CHILD_CODE = "import sys; from fgraph.streams.ahead_child import main; main(sys.argv[1], sys.argv[2])"


def ahead_lines(lines: Iterable[tuple[int, bytes | str]], kind: str) -> contextlib.closing:
    """``ahead(lines, kind)``, closed (its child stopped) when the ``with`` block is left."""
    return contextlib.closing(ahead(lines, kind))


def ahead(lines: Iterable[tuple[int, bytes | str]], kind: str, *,
          start_after: int | None = None) -> Iterator[tuple[int, bytes, bool]]:
    """``(number, raw, checked)`` for every ``(number, line)`` of ``lines``, in order (``raw``: the
    line's bytes, as ``_encoded`` gives them); ``checked``
    is true when the child's check ``kind`` (a key of ``CHECKS``) passed. ``start_after``:
    ``START_AFTER`` unless given; negative, no child at all."""
    source = iter(lines)
    if start_after is None:
        start_after = START_AFTER
    if start_after < 0:
        for number, line in source:
            yield number, _encoded(line), False
        return
    for _ in range(start_after):
        try:
            number, line = next(source)
        except StopIteration:
            return
        yield number, _encoded(line), False
    child = Child.start(kind)
    if child is None:
        for number, line in source:
            yield number, _encoded(line), False
        return
    try:
        yield from child.run(source)
    finally:
        child.stop()


class Child:
    """The checking child. Both of its pipes are non-blocking on this side: batches are written
    as far as the pipe takes them (the rest at the next batch), flags read as far as they have
    come; no thread of this process runs for the child (the writer keeps the GIL to itself)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.out_fd = proc.stdout.fileno()  # type: ignore[union-attr]
        self.in_fd = proc.stdin.fileno()  # type: ignore[union-attr]
        os.set_blocking(self.out_fd, False)
        os.set_blocking(self.in_fd, False)
        try:   # Linux: room for every batch in flight, so a write is never left half done
            import fcntl
            fcntl.fcntl(self.in_fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
        except (ImportError, OSError):
            pass
        self.flags = bytearray()      # answers received and not used yet
        self.owed = 0                 # bytes of answers to drop (batches done without them)
        self.unsent = bytearray()     # batches the pipe has not taken yet
        self.failed = False

    @classmethod
    def start(cls, kind: str) -> Child | None:
        proc = None
        try:
            package = os.path.dirname(os.path.abspath(__file__))
            proc = subprocess.Popen([sys.executable, "-P", "-c", CHILD_CODE, kind, package], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            return cls(proc)
        except OSError:
            if proc is not None:
                proc.kill()
                proc.communicate()
            return None

    def run(self, source: Iterator[tuple[int, bytes | str]]) -> Iterator[tuple[int, bytes | str, bool]]:
        sent: deque[list[tuple[int, bytes | str]]] = deque()
        failure: Exception | None = None
        done = False
        while True:
            while not done and len(sent) < IN_FLIGHT:
                batch: list[tuple[int, bytes | str]] = []
                size = 0
                try:
                    while len(batch) < BATCH_LINES and size < AHEAD_BATCH_BYTES:
                        number, line = next(source)
                        raw = _encoded(line)
                        batch.append((number, raw))
                        size += len(raw)
                except StopIteration:
                    done = True
                except Exception as exc:  # noqa: BLE001 - the source's own error, raised in its place below
                    done, failure = True, exc
                if batch:
                    self.send(batch)
                    sent.append(batch)
            if not sent:
                break
            batch = sent.popleft()
            flags = self.answer(len(batch))
            if flags is None:
                for number, line in batch:
                    yield number, line, False
            else:
                for (number, line), flag in zip(batch, flags):
                    yield number, line, flag == 1
        if failure is not None:
            raise failure

    def send(self, batch: list[tuple[int, bytes | str]]) -> None:
        if self.failed:
            return
        parts = [raw for _, raw in batch]
        sizes = list(map(len, parts))
        if max(sizes) > LINE_BYTES:    # not sent: the child answers 0 for an empty line
            parts = [b"" if len(raw) > LINE_BYTES else raw for raw in parts]
            sizes = list(map(len, parts))
        self.unsent += struct.pack(f"<I{len(sizes)}I", len(sizes), *sizes)
        self.unsent += b"".join(parts)
        self._push()

    def answer(self, count: int) -> bytes | None:
        """The flags of the next batch if they have all arrived, else None (that batch's answer is
        dropped when it comes)."""
        if self.failed:
            return None
        self._push()
        self._receive()
        deadline = time.monotonic() + WAIT_SECONDS
        while not self.failed and len(self.flags) < self.owed + count and time.monotonic() < deadline:
            select.select([self.out_fd], [self.in_fd] if self.unsent else [], [],
                          max(0.0, deadline - time.monotonic()))
            self._push()
            self._receive()
        if self.owed:
            dropped = min(self.owed, len(self.flags))
            del self.flags[:dropped]
            self.owed -= dropped
        if self.failed or self.owed or len(self.flags) < count:
            self.owed += count
            return None
        flags = bytes(self.flags[:count])
        del self.flags[:count]
        if flags.strip(b"\x00\x01"):
            self.give_up()
            return None
        return flags

    def _receive(self) -> None:
        while True:
            try:
                chunk = os.read(self.out_fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                self.give_up()
                return
            if not chunk:
                self.give_up()
                return
            self.flags += chunk

    def _push(self) -> None:
        while self.unsent and not self.failed:
            try:
                written = os.write(self.in_fd, self.unsent)
            except BlockingIOError:
                return
            except OSError:
                self.give_up()
                return
            del self.unsent[:written]

    def give_up(self) -> None:
        self.failed = True

    def stop(self) -> None:
        """End the child (closing its input ends it; kill it if it does not go) and reap it."""
        self.failed = True
        proc = self.proc
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()  # type: ignore[union-attr]
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _encoded(line: bytes | str) -> bytes:
    """A line as the bytes apply and restore read it (a text line: UTF-8, lone surrogates kept)."""
    return line if type(line) is bytes else line.encode("utf-8", "surrogatepass") if isinstance(line, str) else bytes(line)


def applied_line(raw: bytes) -> tuple[dict, str, bytes]:
    """``(record, canonical text, SHA-256)`` of an event/1 line that passed ``ahead_child.check_apply``: parsed
    as ``apply.parse_line`` parses it (not validated again); its text is its canonical text."""
    return loads(raw), raw.decode("utf-8"), hashlib.sha256(raw).digest()  # type: ignore[return-value]
