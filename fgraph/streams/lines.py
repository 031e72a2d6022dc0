"""The one line reader of the streams wing: event/1 (apply, verify) and snapshot/1 (restore)
are read here, LF-separated, numbered from 1, each line capped before it is held whole."""

from __future__ import annotations

from typing import Iterable, Iterator

from fgraph.core.errors import FgraphError, FormatError, ValueTypeError
from fgraph.core.limits import MAX_EVENT_BYTES


def iter_lines(source, max_bytes: int = MAX_EVENT_BYTES) -> Iterator[tuple[int, bytes | str]]:
    """(line number, line without LF) for every non-blank line; LF is the only separator."""
    if isinstance(source, (str, bytes)):
        sep = "\n" if isinstance(source, str) else b"\n"
        chunks: Iterable = (part for part in source.split(sep))
    elif hasattr(source, "readline"):
        chunks = _bounded_readlines(source, max_bytes)
    else:
        chunks = source
    for number, line in enumerate(chunks, start=1):
        if isinstance(line, (bytes, bytearray)):
            line = bytes(line).rstrip(b"\n")
            if line.strip(b" \t\r\n"):
                yield number, line
        else:
            line = line.rstrip("\n")
            if line.strip(" \t\r\n"):
                yield number, line


def _bounded_readlines(handle, max_bytes: int) -> Iterator:
    """readline with a cap, so one endless line cannot exhaust memory."""
    while True:
        line = handle.readline(max_bytes + 2)
        if not line:
            return
        if len(line) > max_bytes + 1 and not line.endswith(b"\n" if isinstance(line, bytes) else "\n"):
            yield line  # oversized: rejected by size before the rest is read
            return
        yield line


def not_utf8(number: int, source, what: str) -> FgraphError:
    """A named file that is not UTF-8 is a FormatError about the file; a line read from stdin or
    memory is a TypeError about that line (both as the published runtime answers)."""
    name = getattr(source, "name", None)
    if isinstance(name, str) and not name.startswith("<"):
        return FormatError(f"{what} file {name!r} cannot be read as UTF-8",
                           "save it as UTF-8 text").at_line(number)
    return ValueTypeError("the line is not valid UTF-8 text", f"{what}s are UTF-8 text").at_line(number)
