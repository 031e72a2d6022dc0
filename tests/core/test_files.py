"""Proves fgraph/core/files.py: an atomic replace that never writes through a link, never onto a
FIFO or directory, leaves no temporary behind, and is what the sync cursor and scrub marker use."""

from __future__ import annotations

import os

import pytest

from fgraph.core.errors import Conflict
from fgraph.core.files import fsync_directory, fsync_file, write_atomically


def test_replaces_the_contents_and_leaves_only_the_target(tmp_path):
    target = tmp_path / "cursor.json"
    write_atomically(str(target), b"one")
    write_atomically(str(target), b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cursor.json"]


def test_a_planted_temporary_name_is_never_written_through(tmp_path):
    victim = tmp_path / "elsewhere"
    victim.write_bytes(b"keep")
    for name in ("cursor.json.tmp", ".cursor.json.tmp"):
        os.symlink(victim, tmp_path / name)
    write_atomically(str(tmp_path / "cursor.json"), b"new")
    assert victim.read_bytes() == b"keep" and (tmp_path / "cursor.json").read_bytes() == b"new"
    assert not (tmp_path / "cursor.json").is_symlink()


def test_a_target_that_is_a_link_fifo_or_directory_is_refused(tmp_path):
    victim = tmp_path / "elsewhere"
    victim.write_bytes(b"keep")
    os.symlink(victim, tmp_path / "link")
    os.symlink(tmp_path / "missing", tmp_path / "dangling")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    for name in ("link", "dangling", "fifo", "dir"):
        with pytest.raises(Conflict):
            write_atomically(str(tmp_path / name), b"x", "sync cursor")
    assert victim.read_bytes() == b"keep" and not (tmp_path / "missing").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "dir", "elsewhere", "fifo", "link"]


def test_a_failed_write_removes_its_temporary(tmp_path, monkeypatch):
    def broken(*_):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        write_atomically(str(tmp_path / "marker"), b"x")
    assert list(tmp_path.iterdir()) == []


def test_fsync_helpers_accept_files_and_directories(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    fsync_file(str(tmp_path / "f"))
    fsync_directory(str(tmp_path))
