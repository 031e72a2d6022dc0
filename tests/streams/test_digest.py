"""Proves the stream digest (issue 35, R3): BLAKE3 of the exact bytes, the same through the reader
apply uses as in one read, and a mismatch at the end of the stream refused with Conflict."""

from __future__ import annotations

import io

import blake3
import pytest

from fgraph.core.errors import Conflict, ValueTypeError
from fgraph.streams.digest import DigestReader, digest_of, parse_digest

DATA = b'{"a":1}\n\n{"b":2}\r\nno final LF'


def test_the_digest_is_blake3_of_every_byte():
    assert digest_of(io.BytesIO(DATA)) == "blake3:" + blake3.blake3(DATA).hexdigest()
    assert digest_of(io.BytesIO(b"")) == "blake3:" + blake3.blake3(b"").hexdigest()


def test_the_reader_hashes_what_it_hands_out_and_checks_at_the_end():
    expected = digest_of(io.BytesIO(DATA))
    reader = DigestReader(io.BytesIO(DATA), expected)
    lines = []
    while line := reader.readline(1000):
        lines.append(line)
    assert b"".join(lines) == DATA and reader.finished and reader.digest() == expected


def test_other_bytes_are_a_conflict_when_the_stream_ends():
    reader = DigestReader(io.BytesIO(DATA + b"x"), digest_of(io.BytesIO(DATA)))
    reader.readline()   # nothing is refused before the end: the bytes are not all known yet
    with pytest.raises(Conflict, match="nothing was applied; review the stream again"):
        while reader.readline():
            pass


def test_a_malformed_digest_is_refused_before_anything_is_read():
    for bad in ("abc", "sha256:" + "0" * 64, "blake3:" + "g" * 64, "blake3:" + "0" * 63, None):
        with pytest.raises(ValueTypeError, match="review --digest"):
            parse_digest(bad)
    assert parse_digest(" BLAKE3:" + "A" * 64 + "\n") == "blake3:" + "a" * 64
