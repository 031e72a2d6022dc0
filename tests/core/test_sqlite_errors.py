"""SQLite's failures of the environment become typed errors with a hint; bugs stay untranslated."""

from __future__ import annotations

import apsw
import pytest

from fgraph.core.errors import Conflict, FormatError, ReadOnly, TooLarge
from fgraph.core.sqlite_errors import translate


@pytest.mark.parametrize("raised, expected, words", [
    (apsw.FullError("database or disk is full"), TooLarge, "full"),
    (apsw.ReadOnlyError("attempt to write a readonly database"), ReadOnly, "cannot be written"),
    (apsw.IOError("disk I/O error"), FormatError, "disk I/O error"),
    (apsw.CantOpenError("unable to open database file"), FormatError, "could not open"),
    (apsw.NotADBError("file is not a database"), FormatError, "not a database"),
    (apsw.CorruptError("database disk image is malformed"), FormatError, "damaged"),
    (apsw.BusyError("database is locked"), Conflict, "locked"),
    (apsw.LockedError("database table is locked"), Conflict, "locked"),
])
def test_environment_failures_are_typed_with_a_hint(raised, expected, words):
    typed = translate(raised)
    assert type(typed) is expected and words in typed.message and typed.hint
    assert "rolled back" not in str(typed)
    assert "nothing of it was written" in str(translate(raised, writing=True))


@pytest.mark.parametrize("raised", [apsw.ConstraintError("UNIQUE constraint failed"), apsw.SQLError("syntax"),
                                    ValueError("x"), KeyError("k")])
def test_bugs_are_not_disguised_as_environment_failures(raised):
    assert translate(raised) is None


def test_text_the_driver_cannot_decode_is_a_damaged_file_and_keeps_the_bytes_out_of_the_message():
    raised = UnicodeDecodeError("utf-8", b"secret \xff value", 7, 8, "invalid start byte")
    typed = translate(raised)
    assert type(typed) is FormatError and "not valid UTF-8 (byte 7" in typed.message and "doctor" in typed.hint
    assert "secret" not in str(typed) and "nothing of it was written" in str(translate(raised, writing=True))


def test_the_backup_apis_lost_code_reads_as_a_failed_write():
    typed = translate(apsw.IOError("not an error"))
    assert "not an error" not in str(typed) and "a write failed" in str(typed)


def test_as_typed_is_the_faces_one_boundary():
    from fgraph.core.errors import NotFound
    from fgraph.core.sqlite_errors import as_typed
    mine = NotFound("x", "y")
    assert as_typed(mine) is mine
    assert as_typed(apsw.FullError("disk full")).name == "TooLarge"
    assert as_typed(RuntimeError("a bug")) is None
