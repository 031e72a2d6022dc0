"""Proves fgraph/core/files.py: an atomic replace that never writes through a link, never onto a
FIFO or directory, leaves no temporary behind, and is what the sync cursor and scrub marker use."""

from __future__ import annotations

import os

import pytest

from fgraph.core.errors import Conflict, FgraphError, FormatError, ReadOnly, TooLarge
from fgraph.core.files import (
    append_sidecar, check_regular_file, create_private, fsync_directory, fsync_file, open_regular_input, open_sidecar,
    publish, read_private, read_sidecar, read_sidecar_lines, remove_sidecar, same_file, sweep_abandoned_temporaries, write_atomically,
)


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
    with pytest.raises(TooLarge, match="no space left|No space left"):   # typed, never a bare OSError (issue 29)
        write_atomically(str(tmp_path / "marker"), b"x", "scrub marker")
    assert list(tmp_path.iterdir()) == []


def _dead_pid() -> int:
    """A process id that no longer exists: a child that has been reaped."""
    import subprocess
    import sys
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_temporary_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    target, dead = tmp_path / "marker", _dead_pid()
    (tmp_path / f".marker.{dead}.0a1b2c3d4e5f.tmp").write_bytes(b"half")       # kill -9 mid-write
    (tmp_path / f".marker.{os.getppid()}.0a1b2c3d4e5f.tmp").write_bytes(b"live")  # a live writer's
    (tmp_path / ".marker.0a1b2c3d4e5f.tmp").write_bytes(b"old")                   # no process id: not ours
    os.symlink(tmp_path / "elsewhere", tmp_path / f".marker.{dead}.ffffffffffff.tmp")
    (tmp_path / f".other.{dead}.0a1b2c3d4e5f.tmp").write_bytes(b"another file's")
    write_atomically(str(target), b"new", "scrub marker")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        "marker", f".marker.{os.getppid()}.0a1b2c3d4e5f.tmp", ".marker.0a1b2c3d4e5f.tmp",
        f".marker.{dead}.ffffffffffff.tmp", f".other.{dead}.0a1b2c3d4e5f.tmp"])
    assert not (tmp_path / "elsewhere").exists()


def test_removing_a_sidecar_also_removes_its_abandoned_temporaries(tmp_path):
    dead = _dead_pid()
    (tmp_path / "marker").write_bytes(b"x")
    (tmp_path / f".marker.{dead}.0a1b2c3d4e5f.tmp").write_bytes(b"half")
    remove_sidecar(str(tmp_path / "marker"), "scrub marker")
    assert list(tmp_path.iterdir()) == []
    assert sweep_abandoned_temporaries(str(tmp_path / "marker")) == []


def test_fsync_helpers_accept_files_and_directories(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    fsync_file(str(tmp_path / "f"))
    fsync_directory(str(tmp_path))


def _hostile_entries(tmp_path):
    """A victim file outside, and every kind of entry that may sit where a sidecar goes."""
    victim = tmp_path / "elsewhere"
    victim.write_bytes(b"keep")
    os.symlink(victim, tmp_path / "link")
    os.symlink(tmp_path / "missing", tmp_path / "dangling")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    return victim, ("link", "dangling", "loop", "fifo", "dir")


def test_a_lock_sidecar_is_a_regular_file_never_created_through_a_link(tmp_path):
    victim, names = _hostile_entries(tmp_path)
    for name in names:
        with pytest.raises(Conflict, match="symbolic link|not a regular file"):
            open_sidecar(str(tmp_path / name), "sync lock")
    assert victim.read_bytes() == b"keep" and not (tmp_path / "missing").exists()
    fd = open_sidecar(str(tmp_path / "new.lock"), "sync lock")
    os.close(fd)
    assert (tmp_path / "new.lock").is_file()


def test_reading_a_sidecar_never_follows_a_link_nor_blocks_on_a_fifo(tmp_path):
    _, names = _hostile_entries(tmp_path)
    for name in names:
        with pytest.raises(Conflict):
            read_sidecar(str(tmp_path / name), "sync cursor")   # a FIFO here used to hang forever
    assert read_sidecar(str(tmp_path / "absent"), "sync cursor") is None
    (tmp_path / "cursor").write_bytes(b"{}")
    assert read_sidecar(str(tmp_path / "cursor"), "sync cursor") == b"{}"
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(TooLarge):
        read_sidecar(str(tmp_path / "big"), "sync cursor", limit=100)


def test_removing_a_sidecar_removes_a_link_not_its_target_and_refuses_a_directory(tmp_path):
    victim, _ = _hostile_entries(tmp_path)
    remove_sidecar(str(tmp_path / "link"), "scrub marker")
    assert victim.read_bytes() == b"keep" and not os.path.lexists(tmp_path / "link")
    remove_sidecar(str(tmp_path / "absent"), "scrub marker")
    for name in ("dir", "fifo"):
        with pytest.raises(Conflict, match="directory|FIFO"):
            remove_sidecar(str(tmp_path / name), "scrub marker")
    assert (tmp_path / "dir").is_dir() and os.path.lexists(tmp_path / "fifo")


def test_a_read_only_directory_is_read_only_not_an_os_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    (tmp_path / "ro").mkdir(mode=0o500)
    with pytest.raises(ReadOnly):
        write_atomically(str(tmp_path / "ro" / "marker"), b"x", "scrub marker")


# ---- same_file and publish: one home for backup, restore-backup and sync

def test_same_file_sees_links_and_other_spellings_of_one_file(tmp_path):
    (tmp_path / "a.db").write_bytes(b"x")
    (tmp_path / "b.db").write_bytes(b"x")
    os.link(tmp_path / "a.db", tmp_path / "hard.db")
    os.symlink(tmp_path / "a.db", tmp_path / "soft.db")
    a = str(tmp_path / "a.db")
    assert same_file(a, str(tmp_path / "hard.db")) and same_file(a, str(tmp_path / "soft.db"))
    assert same_file(a, str(tmp_path / "." / "a.db"))
    assert same_file(str(tmp_path / "new.db"), str(tmp_path / "sub" / ".." / "new.db"))  # one name, not there yet
    assert not same_file(a, str(tmp_path / "b.db")) and not same_file(a, str(tmp_path / "missing.db"))


def _scratch(tmp_path, data=b"copy"):
    scratch = tmp_path / ".dest.db.1234.tmp"
    scratch.write_bytes(data)
    return str(scratch)


def publish_backup(scratch, dest, **options):
    publish(scratch, dest, "backup destination", during="the backup", hint="choose a new file", **options)


def test_publish_gives_the_copy_its_name_and_leaves_the_scratch_name_to_the_caller(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr("fgraph.core.files.fsync_directory", lambda d: synced.append(d))
    scratch = _scratch(tmp_path)
    publish_backup(scratch, str(tmp_path / "dest.db"))
    assert (tmp_path / "dest.db").read_bytes() == b"copy" and os.path.samefile(scratch, tmp_path / "dest.db")
    assert synced == [str(tmp_path)]   # the new name is made durable


def test_publish_never_replaces_anything_that_appeared(tmp_path):
    victim = tmp_path / "elsewhere"
    victim.write_bytes(b"keep")
    (tmp_path / "file.db").write_bytes(b"")
    os.symlink(victim, tmp_path / "link.db")
    os.symlink(tmp_path / "missing", tmp_path / "dangling.db")
    os.mkfifo(tmp_path / "fifo.db")
    (tmp_path / "dir.db").mkdir()
    scratch = _scratch(tmp_path)
    for name in ("file.db", "link.db", "dangling.db", "fifo.db", "dir.db"):
        with pytest.raises(Conflict, match=f"backup destination .*{name}' appeared during the backup"):
            publish_backup(scratch, str(tmp_path / name))
    assert victim.read_bytes() == b"keep" and (tmp_path / "file.db").read_bytes() == b""
    assert not os.path.lexists(tmp_path / "missing") and (tmp_path / "fifo.db").is_fifo()


def test_publish_onto_an_empty_file_renames_over_it_and_refuses_anything_else(tmp_path):
    (tmp_path / "empty.db").write_bytes(b"")
    publish(_scratch(tmp_path), str(tmp_path / "empty.db"), "restore destination", during="the restore",
            hint="restore into a new path or an empty file", onto_empty=True)
    assert (tmp_path / "empty.db").read_bytes() == b"copy"
    (tmp_path / "written.db").write_bytes(b"theirs")
    os.symlink(tmp_path / "empty.db", tmp_path / "link.db")
    os.mkfifo(tmp_path / "fifo.db")
    for name, now in (("written.db", "was written"), ("link.db", "became a symbolic link"),
                      ("fifo.db", r"became a FIFO \(named pipe\)")):
        with pytest.raises(Conflict, match=f"{name}' {now} during the restore"):
            publish(_scratch(tmp_path), str(tmp_path / name), "restore destination", during="the restore",
                    hint="restore into a new path or an empty file", onto_empty=True)
    assert (tmp_path / "written.db").read_bytes() == b"theirs" and (tmp_path / "fifo.db").is_fifo()
    publish(_scratch(tmp_path), str(tmp_path / "fresh.db"), "restore destination", during="the restore",
            hint="h", onto_empty=True)
    assert (tmp_path / "fresh.db").read_bytes() == b"copy"


def test_publish_turns_an_os_failure_into_a_typed_error_or_the_callers(tmp_path):
    missing_directory = str(tmp_path / "missing" / "dest.db")
    with pytest.raises(FgraphError) as caught:
        publish_backup(_scratch(tmp_path), missing_directory)
    assert "cannot be published" in caught.value.message and isinstance(caught.value.__cause__, OSError)
    with pytest.raises(FormatError, match="cannot be created"):
        publish_backup(_scratch(tmp_path), missing_directory,
                       failure=lambda exc: FormatError(f"backup destination cannot be created ({exc.strerror})", "h"))


def test_a_private_file_is_created_owner_only_exclusively_and_refused_once_others_may_read_it(tmp_path):
    key = tmp_path / "a.db.signing-key"
    create_private(str(key), b"secret", "signing key")
    assert oct(os.lstat(key).st_mode & 0o777) == oct(0o600) and read_private(str(key), "signing key") == b"secret"
    with pytest.raises(Conflict, match="appeared while it was being created"):
        create_private(str(key), b"other", "signing key")               # never overwritten
    assert key.read_bytes() == b"secret"
    os.chmod(key, 0o604)
    with pytest.raises(ReadOnly, match="may be read by others") as caught:
        read_private(str(key), "signing key")
    assert "chmod 600" in caught.value.hint
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(Conflict, match="symbolic link"):
        create_private(str(tmp_path / "link"), b"x", "signing key")
    assert not (tmp_path / "nowhere").exists() and read_private(str(tmp_path / "missing"), "signing key") is None


def test_an_append_only_note_is_appended_and_read_back_by_line_never_through_a_link_or_fifo(tmp_path):
    note = tmp_path / "r.db.sync-provenance"
    assert list(read_sidecar_lines(str(note), "sync provenance")) == []
    append_sidecar(str(note), b"one\n", "sync provenance")
    append_sidecar(str(note), b"two\n", "sync provenance")
    assert list(read_sidecar_lines(str(note), "sync provenance")) == [b"one\n", b"two\n"]
    append_sidecar(str(note), b"x" * 5000 + b"\n", "sync provenance")
    with pytest.raises(FormatError, match="longer than fgraph writes"):
        list(read_sidecar_lines(str(note), "sync provenance"))
    (tmp_path / "link").symlink_to(note)
    os.mkfifo(tmp_path / "fifo")
    for name in ("link", "fifo"):
        with pytest.raises(Conflict, match="symbolic link|not a regular file"):
            append_sidecar(str(tmp_path / name), b"three\n", "sync provenance")
        with pytest.raises(Conflict, match="symbolic link|not a regular file"):
            list(read_sidecar_lines(str(tmp_path / name), "sync provenance"))


@pytest.mark.parametrize("kind", ["fifo", "link-to-fifo", "directory", "/dev/zero", "/dev/null", "missing"])
def test_an_input_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.symlink(fifo, tmp_path / "link-to-fifo")
    path = {"fifo": str(fifo), "link-to-fifo": str(tmp_path / "link-to-fifo"), "directory": str(tmp_path),
            "missing": str(tmp_path / "nothing")}.get(kind, kind)
    with pytest.raises(FormatError, match="not a regular file" if kind != "missing" else "cannot be read") as caught:
        open_regular_input(path, "creds file")
    assert "creds file" in str(caught.value) and caught.value.hint
    with pytest.raises(FormatError) as checked:
        check_regular_file(path, "creds file", "point FGRAPH_NATS_CREDS at the file")
    if kind != "missing":
        assert checked.value.hint == "point FGRAPH_NATS_CREDS at the file"


def test_an_input_that_is_a_regular_file_or_a_link_to_one_is_read(tmp_path):
    (tmp_path / "in").write_bytes(b"line\n")
    os.symlink(tmp_path / "in", tmp_path / "link")
    for name in ("in", "link"):
        with open_regular_input(str(tmp_path / name)) as handle:
            assert handle.read() == b"line\n"
        check_regular_file(str(tmp_path / name), "CA file")
