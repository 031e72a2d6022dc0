"""A permission problem is ``ReadOnly`` naming the path and the fix (issue 49 item 3), not
``FormatError: … is not a usable fgraph database: SQLite could not read it (attempt to write a
readonly database)`` as the old code said for a read-only file or directory, nor ``FormatError:
cannot open database`` for a new file in a read-only directory.

Root ignores permission bits, so as root the writer runs as ``nobody`` (``setpriv``) and the
immutable attribute (``chattr +i``) stands for a file nobody may write; as another user, ``chmod``
does it. Where ``nobody`` cannot run this checkout's ``fgraph`` (a clone inside a directory only root
may enter, such as ``mktemp -d``'s), root's writer meets the immutable attribute on the file or the
directory instead, which binds root too. Each case is skipped when its tool is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

import fgraph
from tests.support.cli import FGRAPH, clean_env, run_cli
from tests.support.clock import stepping_clock

ROOT = os.geteuid() == 0
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", FGRAPH]


def _nobody_runs_fgraph() -> bool:
    if shutil.which("setpriv") is None:
        return False
    return subprocess.run([*AS_NOBODY, "--version"], capture_output=True, env=clean_env(), timeout=60).returncode == 0


IMMUTABLE = ROOT and not _nobody_runs_fgraph()   # root's writer, stopped by chattr +i


@pytest.fixture
def place():
    """A directory every user may enter (pytest's own tmp is root's only), holding d/a.db."""
    if IMMUTABLE and shutil.which("chattr") is None:
        pytest.skip("nobody cannot run this checkout's fgraph and chattr is missing: no way to stop root writing")
    top = tempfile.mkdtemp(prefix="fgraph-ro-", dir="/tmp")
    os.chmod(top, 0o755)
    folder = os.path.join(top, "d")
    os.mkdir(folder, 0o755)
    path = os.path.join(folder, "a.db")
    with fgraph.connect(path, clock=stepping_clock()) as db:
        db.transact({"id": "ada", "p/n": "Ada"})
    yield folder, path
    if IMMUTABLE:
        for locked in (folder, path):
            subprocess.run(["chattr", "-i", locked], capture_output=True)
    os.chmod(folder, 0o755)
    shutil.rmtree(top)


def _writer(path, *args):
    """``fgraph --db path ARGS`` as a user that only the permission bits govern."""
    executable = AS_NOBODY if ROOT and not IMMUTABLE else FGRAPH
    return run_cli(*args, db=path, env=clean_env(), executable=executable)


def _lock(folder, path, what):
    """Make ``what`` (file or directory) unwritable for the writer: bits that the writer obeys."""
    if IMMUTABLE:
        if subprocess.run(["chattr", "+i", path if what == "file" else folder], capture_output=True).returncode:
            pytest.skip("this filesystem has no immutable attribute")
        return
    if what == "file":
        os.chmod(path, 0o444)
    else:
        os.chmod(path, 0o666 if ROOT else 0o644)   # the file itself writable
        os.chmod(folder, 0o555)


def test_a_read_only_file_is_read_only_naming_it(place):
    folder, path = place
    _lock(folder, path, "file")
    code, out, err = _writer(path, "add", '{"id":"bob","p/n":"Bob"}')
    assert (code, out) == (1, "")
    assert err.startswith(f"ReadOnly: {path!r} cannot be written by user ")
    assert f"make it writable (chmod u+w {path!r}" in err and "FormatError" not in err
    assert _writer(path, "get", "ada").returncode == 0      # reading still works


@pytest.mark.parametrize("new", [False, True])
def test_a_read_only_directory_is_read_only_naming_it(place, new):
    folder, path = place
    _lock(folder, path, "directory")
    target = os.path.join(folder, "new.db") if new else path
    code, out, err = _writer(target, "add", '{"id":"bob","p/n":"Bob"}')
    assert (code, out) == (1, "")
    assert err.startswith(f"ReadOnly: the directory {folder!r} of {target!r} cannot be written by user ")
    assert f"make the directory writable (chmod u+w {folder!r})" in err
    if not new:
        assert _writer(path, "get", "ada").returncode == 0


@pytest.mark.skipif(not ROOT or shutil.which("chattr") is None, reason="the immutable attribute needs root and chattr")
def test_an_immutable_file_is_read_only_for_root_too(place):
    folder, path = place
    if subprocess.run(["chattr", "+i", path], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable attribute")
    try:
        code, out, err = run_cli("add", '{"id":"bob","p/n":"Bob"}', db=path, env=clean_env())
        assert (code, out) == (1, "") and err.startswith(f"ReadOnly: {path!r} cannot be written by user 0: it is read-only ")
        with pytest.raises(fgraph.ReadOnly, match="chattr -i"):
            fgraph.connect(path)
        with fgraph.connect(path, read_only=True) as db:
            assert db.entity("ada") == {"p/n": "Ada"}
    finally:
        subprocess.run(["chattr", "-i", path], check=True)


def test_a_hot_journal_a_read_only_handle_cannot_roll_back_says_so():
    """kill -9 inside a write with a rollback journal leaves a hot journal: a read-only open then
    fails with SQLITE_READONLY_ROLLBACK, which is no permission problem (tests/torture/test_kill.py)."""
    import apsw

    from fgraph.core.sqlite_errors import translate
    exc = apsw.ReadOnlyError("attempt to write a readonly database")
    exc.extendedresult = apsw.SQLITE_READONLY_ROLLBACK
    typed = translate(exc)
    assert typed.name == "ReadOnly" and "hot journal" in str(typed) and "open it writable once" in str(typed)
    plain = apsw.ReadOnlyError("attempt to write a readonly database")
    plain.extendedresult = apsw.SQLITE_READONLY
    assert "hot journal" not in str(translate(plain))
