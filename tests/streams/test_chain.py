"""Proves the hash chain beside a collected stream (issue 35, R5): one link per line binding the
previous one, continued across runs, never written through a link or onto a FIFO, and every
truncation, reordering and edit found with its line."""

from __future__ import annotations

import io
import os

import blake3
import pytest

from fgraph.core.errors import Conflict, FormatError, NotFound
from fgraph.streams.chain import GENESIS, ChainWriter, verify

LINES = [b'{"n":%d}\n' % i for i in range(1, 8)]


def write_chain(path, lines):
    with ChainWriter(str(path)) as chain:
        for line in lines:
            chain.add(line)


def check(tmp_path, lines, chain_lines=LINES):
    chain = tmp_path / "s.chain"
    if not chain.exists():
        write_chain(chain, chain_lines)
    return verify(io.BytesIO(b"".join(lines)), str(chain))


def test_each_link_is_blake3_of_the_previous_link_and_the_line(tmp_path):
    write_chain(tmp_path / "s.chain", LINES[:2])
    first = blake3.blake3(GENESIS + LINES[0]).digest()
    second = blake3.blake3(first + LINES[1]).digest()
    assert (tmp_path / "s.chain").read_bytes() == b"1 %s\n2 %s\n" % (first.hex().encode(), second.hex().encode())


def test_an_existing_chain_is_continued(tmp_path):
    write_chain(tmp_path / "s.chain", LINES[:3])
    write_chain(tmp_path / "s.chain", LINES[3:])
    whole = tmp_path / "whole.chain"
    write_chain(whole, LINES)
    assert (tmp_path / "s.chain").read_bytes() == whole.read_bytes()
    assert check(tmp_path, LINES)["intact"]


def test_truncation_reordering_and_edits_are_found_where_they_are(tmp_path):
    assert check(tmp_path, LINES) == {"chain": str(tmp_path / "s.chain"), "chained": 7, "intact": True,
                                      "last_link": check(tmp_path, LINES)["last_link"], "lines": 7, "problems": [],
                                      "problems_left_out": 0}
    cut = check(tmp_path, LINES[:5])
    assert not cut["intact"] and [(p["kind"], p["line"]) for p in cut["problems"]] == [("truncated", 6)]
    swapped = LINES[:2] + [LINES[3], LINES[2]] + LINES[4:]
    assert [(p["kind"], p["line"], p["detail"]) for p in check(tmp_path, swapped)["problems"]] == [
        ("moved", 3, "the line was chained as line 4"), ("moved", 4, "the line was chained as line 3")]
    edited = LINES[:4] + [b'{"n":50}\n'] + LINES[5:]
    assert [(p["kind"], p["line"]) for p in check(tmp_path, edited)["problems"]] == [("edited", 5)]
    extra = check(tmp_path, LINES + [b'{"n":8}\n'])
    assert [(p["kind"], p["line"]) for p in extra["problems"]] == [("unchained", 8)]
    no_lf = check(tmp_path, LINES[:-1] + [LINES[-1].rstrip(b"\n")])
    assert [(p["kind"], p["line"]) for p in no_lf["problems"]] == [("edited", 7)]


def test_the_chain_file_is_never_a_link_a_fifo_or_a_directory(tmp_path):
    target = tmp_path / "elsewhere"
    os.symlink(target, tmp_path / "link.chain")
    with pytest.raises(Conflict, match="symbolic link"):
        ChainWriter(str(tmp_path / "link.chain"))
    assert not target.exists()
    os.mkfifo(tmp_path / "fifo.chain")
    with pytest.raises(Conflict, match="FIFO"):
        ChainWriter(str(tmp_path / "fifo.chain"))
    (tmp_path / "dir.chain").mkdir()
    with pytest.raises(Conflict):
        ChainWriter(str(tmp_path / "dir.chain"))
    with pytest.raises(Conflict, match="SQLite"):
        ChainWriter(str(tmp_path / "x.db-wal"))
    with pytest.raises(Conflict, match="symbolic link"):
        verify(io.BytesIO(b""), str(tmp_path / "link.chain"))
    with pytest.raises(NotFound, match="tail --chain"):
        verify(io.BytesIO(b""), str(tmp_path / "missing.chain"))


def test_two_writers_of_one_chain_are_refused(tmp_path):
    with ChainWriter(str(tmp_path / "s.chain")):
        with pytest.raises(Conflict, match="another process"):
            ChainWriter(str(tmp_path / "s.chain"))


def test_a_damaged_chain_file_is_a_format_error(tmp_path):
    (tmp_path / "s.chain").write_bytes(b"1 abc\n")
    with pytest.raises(FormatError, match="not a link"):
        ChainWriter(str(tmp_path / "s.chain"))
    with pytest.raises(FormatError, match="not link 1"):
        verify(io.BytesIO(LINES[0]), str(tmp_path / "s.chain"))
    (tmp_path / "s.chain").write_bytes(b"1 " + b"0" * 64)
    with pytest.raises(FormatError, match="partial line"):
        ChainWriter(str(tmp_path / "s.chain"))
