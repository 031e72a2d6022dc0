"""The DATA argument of ``add`` (inline, ``@path`` or ``-``) read with bounded memory.

NDJSON is read line by line, each line bounded by ``MAX_DOCUMENT_INPUT_BYTES``, and twice (every
line is checked before anything is committed, spec 09 §4.1): from the file itself, or from a
spool of stdin. One document (possibly pretty-printed over several lines) is read whole, up to
the same cap. An oversized value is therefore refused while reading, and an import holds one
batch at a time instead of every parsed record.
"""

from __future__ import annotations

import codecs
import contextlib
from collections.abc import Iterator
from typing import IO

from fgraph.core.errors import FormatError, TooLarge
from fgraph.core.files import open_regular_input
from fgraph.core.limits import MAX_EVENT_BYTES

# A JSON escape can take 3 input bytes per output byte (\u00e9 for é), so the largest
# event might be written with up to ~3x its canonical size; 4x leaves room for layout.
MAX_DOCUMENT_INPUT_BYTES = 4 * MAX_EVENT_BYTES
READ_CHUNK = 1 << 20
SPOOL_IN_MEMORY = 8 << 20


class DataSource:
    """DATA that can be read more than once: as lines (NDJSON, twice over) or whole (one document)."""

    def __init__(self, origin: str, text: str | None = None, handle: IO[bytes] | None = None):
        self.origin = origin            # "inline", "stdin" or the file path
        self._text = text
        self._handle = handle
        # Stdin is decoded as the published runtime decodes it: an undecodable byte becomes a lone
        # surrogate (U+DC80..U+DCFF), so the line still parses and the record holding it is refused
        # when it is planned, after the lines before it committed (docs/format.md, "Stdin").
        # A file given as @path must be UTF-8 as a whole.
        self._errors = "surrogateescape" if origin == "stdin" else "strict"

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line number, stripped text) of each non-blank LF-separated line, from the start; a line
        over the cap is refused before it is decoded. Only LF separates records (not U+2028,
        U+2029 or U+0085, which may occur raw inside JSON strings)."""
        for number, line in self.lines_with_faults():
            if isinstance(line, BadLine):
                raise line.error
            yield number, line

    def lines_with_faults(self) -> Iterator[tuple[int, "str | BadLine"]]:
        """``lines``, except that a line over the cap or not valid UTF-8 is yielded as a ``BadLine``
        (its bytes skipped in bounded memory) and reading goes on: an importer reports it as one
        bad line instead of stopping. ``line_count`` is the number of the last line, blank ones
        included, once the iteration is over."""
        self.line_count = 0
        if self._text is not None:
            for number, line in text_lines(self._text):
                self.line_count = number
                yield number, line
            self.line_count = _count_lines(self._text)
            return
        handle = self._handle
        handle.seek(0)
        number = offset = 0
        while raw := handle.readline(MAX_DOCUMENT_INPUT_BYTES + 1):
            number += 1
            self.line_count = number
            if len(raw) > MAX_DOCUMENT_INPUT_BYTES:
                # the rest of the line is skipped only when the caller goes on (``lines`` stops here)
                yield number, BadLine(
                    f"the line is over {MAX_DOCUMENT_INPUT_BYTES} bytes",
                    TooLarge(f"add input line {number} is over {MAX_DOCUMENT_INPUT_BYTES} bytes",
                             "a record must fit in one event (8 MiB); split large values into smaller facts"))
                offset += len(raw) + _skip_rest_of_line(handle, raw)
                continue
            try:
                line = raw.decode("utf-8", self._errors).strip()
            except UnicodeDecodeError as exc:
                yield number, BadLine(f"the line is not valid UTF-8 (byte {exc.start + 1} of the line)",
                                      _not_utf8(self.origin, offset + exc.start, number))
                offset += len(raw)
                continue
            offset += len(raw)
            if line:
                yield number, line

    def whole_text(self) -> str:
        """The whole input as one text; over the cap ⇒ TooLarge, found while reading."""
        if self._text is not None:
            return self._text
        self._handle.seek(0)
        decoder = codecs.getincrementaldecoder("utf-8")(self._errors)
        parts, offset = [], 0
        while chunk := self._handle.read(READ_CHUNK):
            offset += len(chunk)
            if offset > MAX_DOCUMENT_INPUT_BYTES:
                raise TooLarge(f"add input is over {MAX_DOCUMENT_INPUT_BYTES} bytes and is not NDJSON",
                               "one JSON document must fit in one event (8 MiB); give records as NDJSON, "
                               "one transaction per line")
            try:
                parts.append(decoder.decode(chunk))
            except UnicodeDecodeError as exc:
                raise _not_utf8(self.origin, offset - len(chunk) + exc.start) from None
        try:
            parts.append(decoder.decode(b"", final=True))
        except UnicodeDecodeError as exc:
            raise _not_utf8(self.origin, offset + exc.start) from None
        return "".join(parts)


def text_lines(text: str) -> Iterator[tuple[int, str]]:
    """``DataSource.lines`` of a text already in memory."""
    start, number, size = 0, 0, len(text)
    while start <= size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        number += 1
        line = text[start:end].strip()
        if line:
            yield number, line
        start = end + 1


def _not_utf8(origin: str, byte: int, line: int | None = None) -> Exception:
    where = f"line {line}, byte {byte}" if line is not None else f"byte {byte}"
    return FormatError(f"input file {origin!r} is not valid UTF-8 ({where})", "save the file as UTF-8")


class BadLine:
    """A line that cannot be read as text: why (for a health report) and the error ``lines`` raises."""

    __slots__ = ("reason", "error")

    def __init__(self, reason: str, error: Exception):
        self.reason, self.error = reason, error


def _skip_rest_of_line(handle: IO[bytes], head: bytes) -> int:
    """Read past the rest of an oversized line, a chunk at a time; returns how many bytes that was."""
    if head.endswith(b"\n"):
        return 0
    skipped = 0
    while chunk := handle.readline(READ_CHUNK):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped


def _count_lines(text: str) -> int:
    """Lines of a text as ``text_lines`` numbers them: a final LF ends the last line, it starts none."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _unreadable(path: str, exc: OSError) -> FormatError:
    return FormatError(f"input file {path!r} cannot be read ({exc.strerror or exc})",
                       "check the path and its permissions")


@contextlib.contextmanager
def open_data(arg: str, stdin: IO | None) -> Iterator[DataSource]:
    """DATA as a ``DataSource``: ``-`` is stdin, ``@path`` a UTF-8 file, anything else the text itself."""
    if arg == "-":
        with _stdin_source(stdin) as source:
            yield source
    elif arg.startswith("@"):
        with _file_source(arg[1:]) as source:
            yield source
    else:
        yield DataSource("inline", arg)


@contextlib.contextmanager
def _file_source(path: str) -> Iterator[DataSource]:
    if not path:
        raise FormatError("no input file is named after '@'", "write @PATH, for example @facts.ndjson")
    handle = open_regular_input(path)   # a FIFO, a device or a directory is refused at once (issue 48 item 4)
    with handle:
        try:
            yield DataSource(path, handle=handle)
        except OSError as exc:
            raise _unreadable(path, exc) from None


@contextlib.contextmanager
def _stdin_source(stdin: IO | None) -> Iterator[DataSource]:
    """Stdin is read once into a spool (memory up to 8 MiB, then a temporary file) so it can be re-read."""
    if stdin is None:
        raise FormatError("standard input is not available", "pipe the data in, or pass it inline or as @file")
    binary = getattr(stdin, "buffer", None)
    if binary is None:  # a text stream without bytes underneath (tests, embedding)
        yield DataSource("stdin", stdin.read())
        return
    import tempfile  # only stdin is spooled; every other CLI start is spared the import
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, prefix="fgraph-add-") as spool:
        while chunk := binary.read(READ_CHUNK):
            spool.write(chunk)
        yield DataSource("stdin", handle=spool)


def read_bounded_text(arg: str, stdin: IO | None) -> str:
    """DATA that must be one JSON document (a query, a manifest): over the cap ⇒ TooLarge."""
    with open_data(arg, stdin) as source:
        return source.whole_text()
