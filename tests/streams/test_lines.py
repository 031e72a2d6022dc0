"""Proves the one line reader (fgraph/streams/lines.py): LF is the only separator, blank lines
are skipped but counted, text, bytes, handles and iterables read alike, an endless line is cut
at its cap before it is held whole, and a line that is not UTF-8 gets the error its source calls for."""

from __future__ import annotations

import io

import pytest

from fgraph.core.errors import FormatError, ValueTypeError
from fgraph.streams.lines import iter_lines, not_utf8

TEXT = 'a\n\n  \nb\r\n{"c":1}\rx\n'


@pytest.mark.parametrize("source", [TEXT, TEXT.encode(), io.StringIO(TEXT), io.BytesIO(TEXT.encode()),
                                    [part + "\n" for part in TEXT.split("\n")[:-1]]])
def test_every_source_reads_alike(source):
    lines = [(n, line if isinstance(line, str) else line.decode()) for n, line in iter_lines(source)]
    # CR is data, not a separator: the published runtime splits on LF only
    assert lines == [(1, "a"), (4, "b\r"), (5, '{"c":1}\rx')]


def test_an_endless_line_is_cut_at_its_cap_and_reading_stops():
    handle = io.BytesIO(b"ok\n" + b"x" * 10_000 + b"\nnever read\n")
    lines = list(iter_lines(handle, max_bytes=100))
    assert lines[0] == (1, b"ok")
    assert lines[1][0] == 2 and len(lines[1][1]) == 102  # enough to be refused by size, no more
    assert len(lines) == 2


def test_a_line_exactly_at_the_cap_is_whole():
    handle = io.BytesIO(b"y" * 100 + b"\nz\n")
    assert [len(line) for _, line in iter_lines(handle, max_bytes=100)] == [100, 1]


def test_not_utf8_names_the_file_or_the_line(tmp_path):
    path = tmp_path / "s.ndjson"
    path.write_bytes(b"\xff\n")
    with open(path, "rb") as named:
        error = not_utf8(3, named, "snapshot")
    assert isinstance(error, FormatError) and error.line == 3 and "s.ndjson" in str(error)
    error = not_utf8(7, io.BytesIO(b"\xff"), "event")
    assert isinstance(error, ValueTypeError) and error.line == 7 and "events are UTF-8" in error.hint
