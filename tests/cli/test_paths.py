"""Proves the database-path rules of spec 09 §2: --db, FGRAPH_DB, the default and its legacy table."""

from __future__ import annotations

import os

import pytest

import fgraph
from fgraph.core.errors import FormatError
from fgraph.cli.paths import DEFAULT_PATH, LEGACY_PATH, resolve_db_path
from fgraph.core.probe import APPLICATION_ID_OFFSET, USER_VERSION_OFFSET, committed_wal_header, is_initialized
from tests.support.cli import run_cli
from tests.support.peerlib import peer_executable

FORMAT_V2 = (1718055521, 2)


def _header(application_id: int, user_version: int) -> bytes:
    header = bytearray(b"SQLite format 3\x00" + bytes(84))
    header[USER_VERSION_OFFSET:USER_VERSION_OFFSET + 4] = user_version.to_bytes(4, "big")
    header[APPLICATION_ID_OFFSET:APPLICATION_ID_OFFSET + 4] = application_id.to_bytes(4, "big")
    return bytes(header) + bytes(4096 - 100)


def make(path, state: str) -> None:
    """Put ``path`` into one of the states the table distinguishes."""
    if state == "missing":
        return
    if state == "initialized":
        fgraph.connect(str(path)).close()
    elif state == "empty":
        path.write_bytes(b"")
    elif state == "garbage":
        path.write_bytes(b"hello, not a database\n")
    elif state == "foreign-markers":
        path.write_bytes(_header(12345, 2))
    elif state == "directory":
        path.mkdir()
    else:  # pragma: no cover
        raise AssertionError(state)


# --------------------------------------------------------------- explicit and environment

def test_explicit_path_wins_over_environment_and_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make(tmp_path / DEFAULT_PATH, "initialized")
    assert resolve_db_path("x.db", {"FGRAPH_DB": "y.db"}) == "x.db"


def test_environment_wins_over_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make(tmp_path / DEFAULT_PATH, "initialized")
    assert resolve_db_path(None, {"FGRAPH_DB": "y.db"}) == "y.db"


@pytest.mark.parametrize("explicit, env", [("", {}), ("", {"FGRAPH_DB": "y.db"}), (None, {"FGRAPH_DB": ""})])
def test_empty_explicit_path_is_format_error(explicit, env):
    with pytest.raises(FormatError, match="empty"):
        resolve_db_path(explicit, env)


def test_explicit_path_is_used_even_when_environment_is_empty():
    assert resolve_db_path("x.db", {"FGRAPH_DB": ""}) == "x.db"


def test_explicit_paths_are_not_checked_for_existence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make(tmp_path / DEFAULT_PATH, "empty")
    make(tmp_path / LEGACY_PATH, "initialized")
    assert resolve_db_path("nowhere/at/all.db", {}) == "nowhere/at/all.db"
    assert resolve_db_path(DEFAULT_PATH, {}) == DEFAULT_PATH


# --------------------------------------------------------------- the default-path table

TABLE = [
    # facts.fgraph, fgraph.db, expected (a path or FormatError)
    ("missing", "missing", DEFAULT_PATH),
    ("missing", "initialized", LEGACY_PATH),
    ("missing", "garbage", LEGACY_PATH),
    ("initialized", "missing", DEFAULT_PATH),
    ("initialized", "initialized", DEFAULT_PATH),
    ("initialized", "garbage", DEFAULT_PATH),
    ("empty", "initialized", FormatError),
    ("empty", "empty", FormatError),
    ("garbage", "initialized", FormatError),
    ("foreign-markers", "initialized", FormatError),
    ("directory", "initialized", FormatError),
    ("empty", "directory", FormatError),
    ("empty", "missing", DEFAULT_PATH),
    ("garbage", "missing", DEFAULT_PATH),
    ("directory", "missing", DEFAULT_PATH),
]


@pytest.mark.parametrize("new, legacy, expected", TABLE, ids=[f"{a}-{b}" for a, b, _ in TABLE])
def test_default_path_table(tmp_path, monkeypatch, new, legacy, expected):
    monkeypatch.chdir(tmp_path)
    make(tmp_path / DEFAULT_PATH, new)
    make(tmp_path / LEGACY_PATH, legacy)
    if expected is FormatError:
        with pytest.raises(FormatError, match="pass --db") as info:
            resolve_db_path(None, {})
        assert "fgraph.db" in str(info.value) and "facts.fgraph" in str(info.value)
    else:
        assert resolve_db_path(None, {}) == expected


def test_choosing_a_path_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    resolve_db_path(None, {})
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------- header markers

@pytest.mark.parametrize("content, expected", [
    (b"", False),
    (b"SQLite format 3\x00", False),
    (_header(*FORMAT_V2), True),
    (_header(*FORMAT_V2)[:100], True),
    (_header(*FORMAT_V2)[:99], False),
    (_header(0, 0), False),
    (_header(1718055521, 1), False),
    (_header(1718055521, 3), False),
    (_header(7, 2), False),
    (b"SQLite format 4\x00" + _header(*FORMAT_V2)[16:], False),
])
def test_is_initialized_reads_the_header_markers(tmp_path, content, expected):
    path = tmp_path / "f"
    path.write_bytes(content)
    assert is_initialized(str(path)) is expected


def test_is_initialized_is_false_for_missing_and_directories(tmp_path):
    assert not is_initialized(str(tmp_path / "missing"))
    assert not is_initialized(str(tmp_path))


def test_a_real_database_is_initialized_and_a_new_empty_one_is_not(tmp_path):
    path = tmp_path / "real.fgraph"
    fgraph.connect(str(path)).close()
    assert is_initialized(str(path))
    assert not os.path.exists(str(path) + "-wal")


def _open_with_genesis_in_wal(path):
    """A database whose genesis is committed but not yet checkpointed into the main file."""
    db = fgraph.connect(str(path))
    with open(path, "rb") as handle:
        main_header = handle.read(100)
    if main_header[APPLICATION_ID_OFFSET:APPLICATION_ID_OFFSET + 4] != bytes(4):  # pragma: no cover
        db.close()
        pytest.skip("SQLite checkpointed genesis already; nothing to prove")
    return db


def test_genesis_still_in_the_wal_counts_as_initialized(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = _open_with_genesis_in_wal(tmp_path / DEFAULT_PATH)
    try:
        make(tmp_path / LEGACY_PATH, "initialized")
        assert committed_wal_header(DEFAULT_PATH + "-wal") is not None
        assert is_initialized(DEFAULT_PATH)
        assert resolve_db_path(None, {}) == DEFAULT_PATH
    finally:
        db.close()


def test_a_wal_frame_with_a_bad_checksum_is_ignored(tmp_path):
    path = tmp_path / "w.fgraph"
    db = _open_with_genesis_in_wal(path)
    try:
        wal = bytearray((tmp_path / "w.fgraph-wal").read_bytes())
    finally:
        db.close()
    copy = tmp_path / "copy.fgraph"  # an uninitialized main file next to the copied WAL
    copy.write_bytes(_header(0, 0))
    (tmp_path / "copy.fgraph-wal").write_bytes(bytes(wal))
    assert is_initialized(str(copy))
    wal[32 + 24 + 60] ^= 0xFF  # flip a byte inside the first frame's page image
    (tmp_path / "copy.fgraph-wal").write_bytes(bytes(wal))
    assert committed_wal_header(str(copy) + "-wal") is None
    assert not is_initialized(str(copy))


@pytest.mark.parametrize("content", [b"", b"\x37\x7f\x06\x82" + bytes(28), os.urandom(200)])
def test_malformed_wal_files_are_ignored(tmp_path, content):
    (tmp_path / "x-wal").write_bytes(content)
    assert committed_wal_header(str(tmp_path / "x-wal")) is None


# --------------------------------------------------------------- against the published runtime

PEER_ROWS = [("missing", "missing"), ("missing", "initialized"), ("initialized", "initialized"),
             ("empty", "initialized"), ("empty", "missing"), ("directory", "initialized")]


def _init_outcome(executable: str, directory) -> tuple:
    """Run ``init`` with the implicit path; report the error name or which files are now initialized."""
    env = {k: v for k, v in os.environ.items() if k != "FGRAPH_DB"}
    proc = run_cli("init", cwd=directory, env=env, executable=executable)
    assert "Traceback" not in proc.stderr
    if proc.returncode:
        return ("error", proc.stderr.split(":", 1)[0])
    return ("ok",) + tuple(name for name in (DEFAULT_PATH, LEGACY_PATH)
                           if is_initialized(os.path.join(directory, name)))


@pytest.mark.peer
@pytest.mark.skipif(not peer_executable(), reason="FGRAPH_PEER is not set")
@pytest.mark.parametrize("new, legacy", PEER_ROWS, ids=[f"{a}-{b}" for a, b in PEER_ROWS])
def test_default_path_rows_match_the_peer(tmp_path, new, legacy, cli_executable):
    outcomes = []
    for label, executable in (("ours", cli_executable), ("peer", peer_executable())):
        directory = tmp_path / label
        directory.mkdir()
        make(directory / DEFAULT_PATH, new)
        make(directory / LEGACY_PATH, legacy)
        outcomes.append(_init_outcome(executable, str(directory)))
    assert outcomes[0] == outcomes[1]


@pytest.fixture
def cli_executable():
    import sys
    return os.path.join(os.path.dirname(sys.executable), "fgraph")
