"""Is this file an initialized fgraph database? Answered from its SQLite header bytes
(user_version at offset 60, application_id at 68, big-endian) without opening SQLite, so asking
never creates a file and never takes a lock. While another process keeps a new database open,
its first commits (genesis included) may still live only in the ``-wal`` file; the latest
committed copy of page 1 found there wins over the main file's.
"""

from __future__ import annotations

import struct

from fgraph.core.limits import APPLICATION_ID, USER_VERSION

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
USER_VERSION_OFFSET = 60
APPLICATION_ID_OFFSET = 68
WAL_MAGIC_LITTLE, WAL_MAGIC_BIG = 0x377F0682, 0x377F0683
WAL_HEADER_SIZE, WAL_FRAME_HEADER_SIZE = 32, 24


def is_initialized(path: str) -> bool:
    """True when ``path`` is a SQLite file whose committed header carries the format-v2 markers."""
    header = committed_wal_header(path + "-wal") or _read_header(path)
    if header is None or len(header) < HEADER_SIZE or not header.startswith(SQLITE_MAGIC):
        return False
    user_version = int.from_bytes(header[USER_VERSION_OFFSET:USER_VERSION_OFFSET + 4], "big")
    application_id = int.from_bytes(header[APPLICATION_ID_OFFSET:APPLICATION_ID_OFFSET + 4], "big")
    return (application_id, user_version) == (APPLICATION_ID, USER_VERSION)


def _read_header(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(HEADER_SIZE)
    except OSError:
        return None


def committed_wal_header(wal_path: str) -> bytes | None:
    """The first 100 bytes of page 1 as of the last valid commit in a WAL file, or None.

    Follows SQLite's WAL recovery rules (https://sqlite.org/fileformat2.html#walformat):
    frames count while their salts match the WAL header and the cumulative
    checksum holds; only frames up to the last commit frame are committed.
    """
    try:
        with open(wal_path, "rb") as wal:
            head = wal.read(WAL_HEADER_SIZE)
            if len(head) < WAL_HEADER_SIZE:
                return None
            magic, _, page_size, _, salt1, salt2, check1, check2 = struct.unpack(">8I", head)
            if magic not in (WAL_MAGIC_LITTLE, WAL_MAGIC_BIG) or page_size < 512 or page_size > 65536 \
                    or page_size & (page_size - 1):
                return None
            order = ">" if magic == WAL_MAGIC_BIG else "<"
            checksum = _wal_checksum(head[:24], order, (0, 0))
            if checksum != (check1, check2):
                return None
            committed = pending = None
            while len(frame := wal.read(WAL_FRAME_HEADER_SIZE + page_size)) == WAL_FRAME_HEADER_SIZE + page_size:
                page, commit, frame_salt1, frame_salt2, sum1, sum2 = struct.unpack(">6I", frame[:24])
                if (frame_salt1, frame_salt2) != (salt1, salt2):
                    break
                checksum = _wal_checksum(frame[24:], order, _wal_checksum(frame[:8], order, checksum))
                if checksum != (sum1, sum2):
                    break
                if page == 1:
                    pending = frame[WAL_FRAME_HEADER_SIZE:WAL_FRAME_HEADER_SIZE + HEADER_SIZE]
                if commit:
                    committed = pending if pending is not None else committed
                    pending = None
            return committed
    except OSError:
        return None


def _wal_checksum(data: bytes, order: str, seed: tuple[int, int]) -> tuple[int, int]:
    s0, s1 = seed
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1
