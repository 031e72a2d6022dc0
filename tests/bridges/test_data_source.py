"""DATA of `add` read with bounded memory: lines twice over, whole documents up to the cap, UTF-8
errors named by where the bytes came from."""

from __future__ import annotations

import io

import pytest

from fgraph.core.errors import FormatError, TooLarge
from fgraph.bridges.add import data_source
from fgraph.bridges.add.data_source import DataSource, open_data, read_bounded_text, text_lines


class BinaryStdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_lines_skip_blanks_split_on_lf_only_and_can_be_read_twice(tmp_path):
    path = tmp_path / "in.ndjson"
    path.write_bytes(b'{"a":1}\r\n\n  \n{"b":"\xe2\x80\xa8"}\n')
    with open_data(f"@{path}", None) as source:
        first = list(source.lines())
        assert first == [(1, '{"a":1}'), (4, '{"b":"\u2028"}')]
        assert list(source.lines()) == first
    assert list(text_lines('{"a":1}\r\n\n{"b":2}')) == first[:1] + [(3, '{"b":2}')]


def test_stdin_is_spooled_so_it_can_be_read_twice():
    with open_data("-", BinaryStdin(b'{"a":1}\n{"b":2}\n')) as source:
        assert [n for n, _ in source.lines()] == [1, 2]
        assert [n for n, _ in source.lines()] == [1, 2]
        assert source.whole_text() == '{"a":1}\n{"b":2}\n'


def test_a_line_over_the_cap_is_refused_before_it_is_decoded(tmp_path, monkeypatch):
    monkeypatch.setattr(data_source, "MAX_DOCUMENT_INPUT_BYTES", 100)
    path = tmp_path / "big"
    path.write_bytes(b'{"a":1}\n' + b"x" * 500 + b"\n")
    with open_data(f"@{path}", None) as source, pytest.raises(TooLarge, match="line 2"):
        list(source.lines())
    with open_data(f"@{path}", None) as source, pytest.raises(TooLarge, match="not NDJSON"):
        source.whole_text()


def test_a_file_must_be_utf8_but_stdin_keeps_undecodable_bytes_as_surrogates(tmp_path):
    path = tmp_path / "latin1"
    path.write_bytes("café\n".encode("latin-1"))
    with open_data(f"@{path}", None) as source, pytest.raises(FormatError, match="byte 3"):
        source.whole_text()
    with open_data(f"@{path}", None) as source, pytest.raises(FormatError, match="byte 3"):
        list(source.lines())
    with open_data("-", BinaryStdin("café\nx\n".encode("latin-1"))) as source:
        assert list(source.lines()) == [(1, "caf\udce9"), (2, "x")]
        assert source.whole_text() == "caf\udce9\nx\n"


def test_missing_and_empty_file_names_are_format_errors(tmp_path):
    with pytest.raises(FormatError, match="no input file is named"):
        read_bounded_text("@", None)
    with pytest.raises(FormatError, match="cannot be read"):
        read_bounded_text(f"@{tmp_path / 'missing'}", None)


def test_inline_text_is_its_own_source():
    assert list(DataSource("inline", "a\n\nb").lines()) == [(1, "a"), (3, "b")]


def test_lines_with_faults_go_on_past_an_undecodable_and_an_oversized_line(tmp_path, monkeypatch):
    monkeypatch.setattr(data_source, "MAX_DOCUMENT_INPUT_BYTES", 16)
    path = tmp_path / "in.ndjson"
    path.write_bytes(b'{"a":1}\n{"b":"\xff"}\n' + b'{"c":"' + b"x" * 40 + b'"}\n{"d":4}\n\n')
    with open_data(f"@{path}", None) as source:
        seen = list(source.lines_with_faults())
        assert [n for n, _ in seen] == [1, 2, 3, 4] and source.line_count == 5
        assert seen[0][1] == '{"a":1}' and seen[3][1] == '{"d":4}'
        assert "not valid UTF-8" in seen[1][1].reason and "over 16 bytes" in seen[2][1].reason
        with pytest.raises(FormatError, match="line 2, byte 14"):
            list(source.lines())   # add keeps refusing the whole input at the first bad line


def test_line_count_of_a_text_counts_blank_lines_but_not_past_the_final_lf():
    source = DataSource("inline", text='{"a":1}\n\n\n')
    assert [n for n, _ in source.lines_with_faults()] == [1] and source.line_count == 3
