"""A BLAKE3 hash chain beside a collected event stream (issue 35, decision R5 in docs/streams.md).

``fgraph tail --chain FILE`` writes one link per line it prints: ``link(n) = blake3(link(n-1) ||
line n with its LF)``, ``link(0)`` being 32 zero bytes, stored as the text line ``"<n> <hex>"``.
The event bytes on stdout are untouched; the chain is a separate file, appended and fsynced
(after the line itself was flushed, so a crash leaves at most a line the chain does not cover,
never a link without its line), opened without following a link and never a FIFO, device or
directory (``fgraph.core.files``), and locked so that two tails cannot interleave their links.
A chain file that exists is continued: its last link and number are read back.

``verify`` reads the stream and the chain side by side (bounded memory): since every link binds
its own line to the previous link, each line is checked on its own, so every line edited is
named, a line found where another one was chained is reported as moved (reordered), a stream
shorter than the chain as truncated and lines after the chain's last link as unchained. The
chain proves nothing against someone who rewrites the chain too: keep its last link elsewhere.
"""

from __future__ import annotations

import fcntl
import os
import re

from fgraph.core import files, sidecars
from fgraph.core.errors import Conflict, FormatError, NotFound
from fgraph.streams.digest import hasher

GENESIS = bytes(32)
_LINK = re.compile(rb"^([1-9][0-9]*) ([0-9a-f]{64})\n$")
SYNC_EVERY = 4096
PROBLEM_CAP = 100
MOVED_MEMORY = 1 << 20   # bytes of mismatched lines kept to find where they moved from


def link(previous: bytes, line: bytes) -> bytes:
    h = hasher()
    h.update(previous)
    h.update(line)
    return h.digest()


def _parse_link(raw: bytes, path: str, expected: int) -> bytes:
    match = _LINK.match(raw)
    if not match or int(match.group(1)) != expected:
        raise FormatError(f"line {expected} of the chain file {path!r} is not link {expected} "
                          f"(\"<number> <64 hex>\"): {raw[:100]!r}",
                          "the chain file is damaged or not a chain; verify-stream cannot use it")
    return bytes.fromhex(match.group(2).decode("ascii"))


class ChainWriter:
    """Appends the links of the lines it is given to the chain file at ``path``."""

    def __init__(self, path: str):
        sidecars.refuse_sidecar_name(path, "chain file")
        self.path = path
        self._fd = files.open_sidecar(path, "chain file")
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise Conflict(f"the chain file {path!r} is being written by another process",
                           "stop the other `fgraph tail --chain` first, or give this one its own chain") from None
        try:
            self.number, self.previous, self.last = self._resume()
        except BaseException:
            os.close(self._fd)
            raise
        self._pending: list[bytes] = []

    def _resume(self) -> tuple[int, bytes, bytes]:
        """(number, link before the last, last link) of the chain as it is on disk."""
        size = os.fstat(self._fd).st_size
        if size == 0:
            return 0, GENESIS, GENESIS
        tail = os.pread(self._fd, min(size, 512), max(0, size - 512))
        if not tail.endswith(b"\n"):
            raise FormatError(f"the chain file {self.path!r} ends in a partial line (a crash while it was written?)",
                              "check it with `fgraph verify-stream`, remove the partial last line, then resume")
        lines = [line + b"\n" for line in tail[:-1].split(b"\n")]
        match = _LINK.match(lines[-1])
        if not match:
            raise FormatError(f"the last line of the chain file {self.path!r} is not a link: {lines[-1][:100]!r}",
                              "give `--chain` a chain file written by `fgraph tail --chain`, or a new path")
        number, last = int(match.group(1)), bytes.fromhex(match.group(2).decode("ascii"))
        previous = GENESIS if number == 1 else _parse_link(lines[-2] if len(lines) > 1 else b"", self.path, number - 1)
        return number, previous, last

    def add(self, line: bytes, before_sync=None) -> None:
        """The link of ``line`` (with its LF), buffered until ``sync``; when the buffer is full,
        ``before_sync`` (the output's flush) runs first, so no link is written before its line."""
        self.previous, self.last = self.last, link(self.last, line)
        self.number += 1
        self._pending.append(b"%d %s\n" % (self.number, self.last.hex().encode("ascii")))
        if len(self._pending) >= SYNC_EVERY:
            if before_sync is not None:
                before_sync()
            self.sync()

    def sync(self) -> None:
        """Append the buffered links and fsync the chain file."""
        if not self._pending:
            return
        data, self._pending = b"".join(self._pending), []
        try:
            view = memoryview(data)
            os.lseek(self._fd, 0, os.SEEK_END)
            while view:
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError as exc:
            raise files.os_failure(exc, self.path, "chain file") from None

    def close(self, *, keep_pending: bool = True) -> None:
        try:
            if keep_pending:
                self.sync()
        finally:
            os.close(self._fd)

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        # a failed output (a broken pipe) may not have delivered the lines of the pending links
        self.close(keep_pending=kind is None)


class ChainedOutput:
    """A binary output whose every ``write`` (one whole line, as ``fgraph tail`` writes them) is also
    linked into ``chain``; ``flush`` flushes the output, then appends and fsyncs the links."""

    def __init__(self, out, chain: ChainWriter):
        self._out, self._chain = out, chain

    def write(self, data: bytes) -> int:
        written = self._out.write(data)
        self._chain.add(data, before_sync=self._out.flush)
        return written

    def flush(self) -> None:
        self._out.flush()
        self._chain.sync()


def chained_end(read, size: int, previous: bytes, last: bytes, limit: int) -> tuple[int, bytes] | None:
    """(offset just after, bytes) of the stream's line that the chain's last link covers, searched
    backwards from the end of a stream of ``size`` bytes read by ``read(offset, length)``, within its
    last ``limit`` bytes; None when no line there is it."""
    window = min(size, 1 << 20)
    while True:
        start = size - window
        data = read(start, window)
        end = len(data)
        while end > 0:
            cut = data.rfind(b"\n", 0, end - 1) if end > 1 else -1
            if cut < 0 and start > 0:
                break   # the line may begin before the window: read a larger one
            line = data[cut + 1:end]
            if line.endswith(b"\n") and link(previous, line) == last:
                return start + end, line
            end = cut + 1
        if start == 0 or window >= limit:
            return None
        window = min(size, window * 4, limit)


def _open_chain(path: str):
    files.refuse_unsafe_target(path, "chain file")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise NotFound(f"the chain file {path!r} does not exist",
                       "pass the file `fgraph tail --chain` wrote beside this stream") from None
    except OSError as exc:
        raise files.os_failure(exc, path, "chain file", "read") from None
    return os.fdopen(fd, "rb")


def _lines(handle):
    """Every line of a binary handle with its LF (the last may lack one), blank lines included."""
    while True:
        line = handle.readline(1 << 24)
        if not line:
            return
        while not line.endswith(b"\n"):
            more = handle.readline(1 << 24)
            if not more:
                break
            line += more
        yield line


def verify(stream, chain_path: str) -> dict:
    """Whether the binary stream ``stream`` is exactly the lines the chain at ``chain_path`` covers."""
    problems, left_out = [], 0
    mismatched_lines: list[tuple[int, bytes]] = []   # stream lines that do not match their link
    mismatched_links: dict[int, tuple[bytes, bytes]] = {}   # chain position -> (previous, link)
    kept = 0

    def problem(kind: str, line: int, detail: str) -> None:
        nonlocal left_out
        if len(problems) < PROBLEM_CAP:
            problems.append({"kind": kind, "line": line, "detail": detail})
        else:
            left_out += 1

    previous, number, chained, unchained = GENESIS, 0, 0, 0
    with _open_chain(chain_path) as chain:
        links = iter(_lines(chain))
        for line in _lines(stream):
            number += 1
            raw = next(links, None)
            if raw is None:
                unchained += 1
                continue
            expected = _parse_link(raw, chain_path, number)
            chained = number
            if link(previous, line) != expected:
                if kept + len(line) <= MOVED_MEMORY and len(mismatched_links) < PROBLEM_CAP:
                    mismatched_lines.append((number, line))
                    kept += len(line)
                if len(mismatched_links) < PROBLEM_CAP:
                    mismatched_links[number] = (previous, expected)
                else:
                    problem("edited", number, "the line differs from the one chained here")
            previous = expected
        missing, last = 0, previous
        for raw in links:
            missing += 1
            chained = number + missing
            last = _parse_link(raw, chain_path, chained)
    for position, line in mismatched_lines:
        origin = next((j for j, (prev, expected) in mismatched_links.items()
                       if j != position and link(prev, line) == expected), None)
        if origin is None:
            problem("edited", position, "the line differs from the one chained here")
        else:
            problem("moved", position, f"the line was chained as line {origin}")
    examined = {position for position, _ in mismatched_lines}
    for position in mismatched_links:
        if position not in examined:   # a line too long to keep for the search above
            problem("edited", position, "the line differs from the one chained here")
    problems.sort(key=lambda p: p["line"])
    if missing:
        problem("truncated", number + 1, f"the stream ends after line {number}; the chain covers {chained} lines "
                f"({missing} missing)")
    if unchained:
        problem("unchained", chained + 1, f"{unchained} line(s) from line {chained + 1} on are not in the chain "
                "(written after its last link, or added)")
    return {"chain": chain_path, "intact": not problems and not left_out, "lines": number, "chained": chained,
            "last_link": last.hex() if chained else None, "problems": problems, "problems_left_out": left_out}
