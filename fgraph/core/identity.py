"""Transaction time and identity: the injectable clock, event UUIDs and anonymous eids.

Both the clock and the event UUID source can be pinned from the environment
(``FGRAPH_CLOCK``, ``FGRAPH_EVENT_SEED``) so that tests and peers reproduce
each other's bytes (spec 03 §7–§8).
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Callable

from fgraph.core import settings
from fgraph.core.checks import strict_int
from fgraph.core.hashing import sha1, sha256
from fgraph.core.errors import ValueTypeError, damaged
from fgraph.core.limits import GENESIS_TX, INSTANT_MAX, INSTANT_MIN, UUID_RE  # noqa: F401 (GENESIS_TX re-exported)

GENESIS_EVENT = "00000000-0000-4000-8000-000000000040"
TICK = 1_000_000

Clock = Callable[[], int]



def system_clock() -> int:
    """Wall-clock time in integer microseconds since the epoch (UTC)."""
    return time.time_ns() // 1000


def clock_from_env() -> Clock:
    """The clock to use: constant when ``FGRAPH_CLOCK`` is set, else the system clock."""
    raw = settings.read(settings.CLOCK)
    if raw is None:
        return system_clock
    value = _parse_clock_env(raw)
    return lambda: value


def _parse_clock_env(raw: str) -> int:
    text = raw.strip()
    if not re.fullmatch(r"-?[0-9]+", text):
        raise ValueTypeError(
            f"FGRAPH_CLOCK={raw!r} is not an integer",
            "set it to integer microseconds since 1970-01-01T00:00:00Z, or unset it")
    value = int(text)
    if not INSTANT_MIN <= value <= INSTANT_MAX:
        raise ValueTypeError(
            f"FGRAPH_CLOCK={raw!r} is outside the instant domain",
            "use microseconds between 0001-01-01 and 9999-12-31")
    return value


def make_clock(clock: Clock | int | None) -> Clock:
    """Normalise the ``clock`` argument of connect(): a callable, a constant, or None."""
    if clock is None:
        return clock_from_env()
    if isinstance(clock, bool) or not (isinstance(clock, int) or callable(clock)):
        raise ValueTypeError(f"clock must be a callable or an integer, not {type(clock).__name__}",
                             "pass a function returning integer microseconds")
    if isinstance(clock, int):
        constant = clock
        return lambda: constant
    return clock


def read_clock(clock: Clock) -> int:
    """One checked clock reading."""
    value = strict_int(clock(), "the clock returned {value!r}, not an integer",
                       "make the clock return integer microseconds")
    if not INSTANT_MIN <= value <= INSTANT_MAX:
        raise ValueTypeError(f"the clock returned {value}, outside the instant domain",
                             "make the clock return microseconds between years 1 and 9999")
    return value


def transaction_time(clock_reading: int, latest_at: int | None) -> int:
    """Monotonic transaction time: the clock, or one second after the latest receipt."""
    if latest_at is not None and latest_at >= clock_reading:
        return latest_at + TICK
    return clock_reading


def seeded_event_uuid(seed: str, tx_id: int) -> str:
    digest = sha256(f"fgraph-event/1\x00{seed}\x00{tx_id}".encode("utf-8")).digest()
    raw = bytearray(digest[:16])
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


EventFactory = Callable[[int], str]


def event_factory_from_env() -> EventFactory:
    """Seeded UUIDs when ``FGRAPH_EVENT_SEED`` is set (tests only), else random v4."""
    seed = settings.read(settings.EVENT_SEED)
    if seed is not None:
        return lambda tx_id: seeded_event_uuid(seed, tx_id)
    return lambda tx_id: str(uuid.uuid4())


def check_event_uuid(text: object, what: str = "event UUID") -> str:
    """A canonical lowercase, hyphenated RFC 4122 UUID (variant 10, version 1–5)."""
    if not isinstance(text, str) or not UUID_RE.match(text):
        raise ValueTypeError(f"{what} {text!r} is not a canonical UUID",
                             "use lowercase hyphenated RFC 4122 form, version 1-5")
    return text


def anonymous_eid(event_uuid: str, ordinal: int) -> bytes:
    """gid of the ordinal-th identity allocated by an event (uuid5 over the ordinal bytes)."""
    namespace = uuid.UUID(event_uuid).bytes
    digest = sha1(namespace + ordinal.to_bytes(8, "big")).digest()
    raw = bytearray(digest[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50
    raw[8] = (raw[8] & 0x3F) | 0x80
    return bytes(raw)


def gid_to_uuid(gid: bytes | bytearray | memoryview | None) -> str:
    if type(gid) is bytes and len(gid) == 16:  # the hot path of snapshots and reads: no UUID object
        h = gid.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    if isinstance(gid, (bytearray, memoryview)) and len(gid) == 16:
        return str(uuid.UUID(bytes=bytes(gid)))
    # every transaction and anonymous entity has a 16-byte gid (the schema checks it): one missing
    # here is a registry row a damaged page lost, or changed
    raise damaged("a transaction or entity has no stored UUID in the identity registry")


def uuid_to_gid(text: str) -> bytes:
    if type(text) is str and len(text) == 36 and text[8] == text[13] == text[18] == text[23] == "-":
        try:  # the hyphenated form, the only one on the wire: no UUID object on the hot path of restore
            raw = bytes.fromhex(text[:8] + text[9:13] + text[14:18] + text[19:23] + text[24:])
        except ValueError:
            raw = b""
        if len(raw) == 16:
            return raw
    return uuid.UUID(text).bytes

