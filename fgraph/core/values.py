"""Fact values: physical tags, wire input, portable tagged input and rendering (02 §1–§3, §6).

``from_wire`` turns a JSON value position into a ``Value`` (what goes into
``fgraph_facts.t``/``v`` plus the ``fgraph_blobs.data`` of indirect values), a
``RefWire`` (the caller resolves the selector) or ``MISSING`` (CAS only).
``render`` turns a stored row back into its JSON wire form.

Size: one table of nine value tags, each with its wire, storage and rendering forms; splitting
the tags apart would scatter one contract (spec 02) over several files.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
import sys
from array import array
from datetime import date
from typing import TYPE_CHECKING, Any, Callable, Literal, NamedTuple, overload

from fgraph.core.hashing import sha256
from .canonical import int_text, short_repr, MAX_JSON_VALUE_DEPTH, dumps_bytes, exceeds_depth, loads
from .errors import FormatError, TooLarge, ValueTypeError
from fgraph.core.limits import INSTANT_MAX, INSTANT_MIN, INT64_MAX, INT64_MIN, MAX_VALUE_BYTES

if TYPE_CHECKING:
    from fgraph.core.types import JSON

TAG_REF, TAG_BOOL, TAG_INT, TAG_FLOAT, TAG_TEXT, TAG_INSTANT = 0, 1, 2, 3, 4, 5
TAG_BYTES, TAG_VECTOR, TAG_LONG_TEXT, TAG_LONG_BYTES, TAG_JSON = 6, 7, 8, 9, 10

#: each declarable type and the tags its stored values may carry (long text and bytes live in blobs)
TYPE_TAGS: dict[str, tuple[int, ...]] = {"ref": (TAG_REF,), "bool": (TAG_BOOL,), "int": (TAG_INT,), "float": (TAG_FLOAT,),
                                         "text": (TAG_TEXT, TAG_LONG_TEXT), "instant": (TAG_INSTANT,),
                                         "bytes": (TAG_BYTES, TAG_LONG_BYTES), "vector": (TAG_VECTOR,), "json": (TAG_JSON,)}
LOGICAL_TYPES = ("bool", "int", "float", "text", "instant", "bytes", "vector", "json", "ref")
_LOGICAL = ("ref", "bool", "int", "float", "text", "instant", "bytes", "vector", "text", "bytes", "json")
INDIRECT_TAGS = (TAG_VECTOR, TAG_LONG_TEXT, TAG_LONG_BYTES)
WRAPPER_KEYS = frozenset(("ref", "instant", "bytes", "vector", "json"))

MAX_INLINE_BYTES = 256
MAX_VECTOR_ELEMENTS = MAX_VALUE_BYTES // 4

_UNIX_ORDINAL = 719163  # date(1970, 1, 1).toordinal()
_DAY_US = 86_400_000_000
_LITTLE = sys.byteorder == "little"


def logical_name(t: int) -> str:
    """Wire name of physical tag ``t`` (8 → "text", 9 → "bytes")."""
    if type(t) is int and 0 <= t <= TAG_JSON:
        return _LOGICAL[t]
    raise FormatError(f"unknown physical value tag {short_repr(t)}", "the database may be damaged; run doctor")


class Value(NamedTuple):


    """A stored value: its tag ``t``, its column value ``v`` and, for indirect tags, the blob."""
    t: int
    v: Any   # int | float | str | bytes; while a plan is made, a ref to a new identity holds its NewIdent
    blob: str | bytes | None = None

    @property
    def logical(self) -> str:
        return _LOGICAL[self.t]


class RefWire(NamedTuple):


    """A ``{"ref": selector}`` value whose selector the caller still has to resolve."""
    selector: object


class _Missing:


    """The ``{"missing": true}`` marker of cas."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


def is_entity_map(raw: object) -> bool:
    """True for a dict that is not a one-key value wrapper (a nested entity map)."""
    return isinstance(raw, dict) and not (len(raw) == 1 and next(iter(raw)) in WRAPPER_KEYS)


def indirect_key(t: int, payload: bytes) -> bytes:
    """SHA-256(bytes([t]) ‖ payload): the 32-byte fgraph_blobs.hash (02 §2)."""
    h = sha256(bytes((t,)))
    h.update(payload)
    return h.digest()


def _too_large(what: str, n: int) -> TooLarge:
    return TooLarge(f"{what} value is {n} bytes, more than the {MAX_VALUE_BYTES}-byte limit",
                    "split it or store it outside fgraph")


# ------------------------------------------------------------------ scalars

def text_value(s: str) -> Value:
    if s.isascii():
        n = len(s)
        if n <= MAX_INLINE_BYTES:
            return Value(TAG_TEXT, s, None)
        b = s.encode("ascii")
    else:
        try:
            b = s.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueTypeError(
                f"text {s[max(0, exc.start - 20):exc.end + 20]!r} contains the lone surrogate "
                f"{s[exc.start:exc.end]!r}", "remove unpaired surrogate code points") from None
        n = len(b)
        if n <= MAX_INLINE_BYTES:
            return Value(TAG_TEXT, s, None)
    if n > MAX_VALUE_BYTES:
        raise _too_large("text", n)
    return Value(TAG_LONG_TEXT, indirect_key(TAG_LONG_TEXT, b), s)


def bytes_value(b: bytes) -> Value:
    n = len(b)
    if n <= MAX_INLINE_BYTES:
        return Value(TAG_BYTES, b, None)
    if n > MAX_VALUE_BYTES:
        raise _too_large("bytes", n)
    return Value(TAG_LONG_BYTES, indirect_key(TAG_LONG_BYTES, b), b)


def _int_value(i: int) -> Value:
    if INT64_MIN <= i <= INT64_MAX:
        return Value(TAG_INT, i, None)
    raise ValueTypeError(f"integer {int_text(i)} is outside the signed 64-bit range", "store it as text")


def _float_value(x: float) -> Value:
    if x - x == 0.0:
        return Value(TAG_FLOAT, x, None)
    raise ValueTypeError(f"float {x!r} is not finite",
                         "NaN and infinity cannot be stored; use a finite number")


def decode_base64(s: object) -> bytes:
    """Strict standard base64 with padding (02 §3.1); Python bytes pass through."""
    if type(s) is bytes:
        return s
    if not isinstance(s, str):
        raise ValueTypeError(f"invalid bytes value {short_repr(s)}",
                             "use a standard padded base64 string")
    n = len(s)
    if n % 4:
        raise ValueTypeError(f"invalid bytes value {short_repr(s)} (length is not a multiple of 4)",
                             "use standard padded base64 (alphabet A-Z a-z 0-9 + /, '=' padding)")
    size = n // 4 * 3 - (s.endswith("==") + s.endswith("="))
    if size > MAX_VALUE_BYTES:
        raise _too_large("bytes", size)
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        raise ValueTypeError(f"invalid bytes value {short_repr(s)}",
                             "use standard padded base64 (alphabet A-Z a-z 0-9 + /, '=' padding, "
                             "no spaces or newlines)") from None


# ------------------------------------------------------------------ instants

_INSTANT_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?(?:Z|([+-])([0-9]{2}):([0-9]{2}))")


def _bad_instant(raw: object) -> ValueTypeError:
    return ValueTypeError(f"invalid instant {short_repr(raw)}",
                          "use integer microseconds or an RFC 3339 string such as 2026-08-24T10:00:00Z")


def _instant_range(us: int, raw: object) -> int:
    if INSTANT_MIN <= us <= INSTANT_MAX:
        return us
    raise ValueTypeError(f"instant {short_repr(raw)} is outside years 0001..9999 (UTC)",
                         "use an instant between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z")


def parse_instant(raw: JSON) -> int:
    """Integer µs or an RFC 3339 string (02 §3.3) → UTC microseconds."""
    t = type(raw)
    if t is int:
        return _instant_range(raw, raw)
    if t is not str:
        if t is bool or not isinstance(raw, (int, str)):
            raise _bad_instant(raw)
        if isinstance(raw, int):
            return _instant_range(int(raw), raw)
        raw = str.__str__(raw)
    m = _INSTANT_RE.fullmatch(raw)
    if m is None:
        raise _bad_instant(raw)
    y, mo, d, h, mi, se, frac, sign, oh, om = m.groups()
    h, mi, se = int(h), int(mi), int(se)
    if h > 23 or mi > 59 or se > 59:
        raise _bad_instant(raw)
    try:
        days = date(int(y), int(mo), int(d)).toordinal() - _UNIX_ORDINAL
    except ValueError:
        raise _bad_instant(raw) from None
    us = (days * 86400 + h * 3600 + mi * 60 + se) * 1_000_000
    if frac:
        us += int((frac + "00000")[:6])  # truncated, never rounded
    if sign:
        oh, om = int(oh), int(om)
        if oh > 23 or om > 59:
            raise _bad_instant(raw)
        off = (oh * 60 + om) * 60_000_000
        us = us - off if sign == "+" else us + off
    return _instant_range(us, raw)


def format_instant(us: int) -> str:
    """UTC microseconds → ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    _instant_range(us, us)
    days, rem = divmod(us, _DAY_US)
    d = date.fromordinal(days + _UNIX_ORDINAL)
    s, f = divmod(rem, 1_000_000)
    h, s = divmod(s, 3600)
    mi, s = divmod(s, 60)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{h:02d}:{mi:02d}:{s:02d}.{f:06d}Z"


# ------------------------------------------------------------------ vectors

def pack_vector(raw: JSON) -> bytes:
    """Validate a vector (non-empty numbers, each a finite float32) → packed little-endian float32."""
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ValueTypeError(f"invalid vector {short_repr(raw)}", "use a non-empty array of finite numbers")
    n = len(raw)
    if n > MAX_VECTOR_ELEMENTS:
        raise _too_large("vector", 4 * n)
    types = set(map(type, raw))
    if not types <= {int, float}:
        bad = next(x for x in raw if type(x) is not int and type(x) is not float)
        raise ValueTypeError(f"invalid vector element {short_repr(bad)}",
                             "use only finite JSON numbers (not booleans, strings, arrays or objects)")
    try:
        finite = float not in types or math.isfinite(sum(raw))
    except OverflowError:
        finite = True  # a huge int: reported below as not representable
    if not finite:
        bad = next((x for x in raw if type(x) is float and not math.isfinite(x)), None)
        if bad is not None:
            raise ValueTypeError(f"invalid vector element {short_repr(bad)}", "NaN and infinity are not supported")
    try:
        return struct.pack(f"<{n}f", *raw)
    except (OverflowError, struct.error):
        pass
    for x in raw:
        try:
            struct.pack("<f", x)
        except (OverflowError, struct.error):
            raise ValueTypeError(f"vector element {short_repr(x)} cannot be represented as float32",
                                 "keep each element within ±3.4028235e38") from None
    raise AssertionError("unreachable")  # pragma: no cover


def as_stored_tuple(item: JSON) -> JSON:
    """A fact tuple whose vector components are given as stored (float32): an event applied from
    another runtime may carry components float32 cannot hold exactly; its fact keeps the rounded
    value, and the two must still be recognised as the same fact (doctor, restore's cross-check)."""
    if isinstance(item, list) and len(item) >= 2 and item[-1] == "vector" and isinstance(item[-2], dict) \
            and set(item[-2]) == {"vector"}:
        try:
            stored = render_vector(pack_vector(item[-2]["vector"]))
        except (ValueTypeError, TooLarge):
            return item
        return [*item[:-2], {"vector": stored}, "vector"]
    return item


def vector_value(raw: JSON) -> Value:
    packed = pack_vector(raw)
    return Value(TAG_VECTOR, indirect_key(TAG_VECTOR, packed), packed)


def render_vector(blob: bytes) -> list[float]:
    """Packed little-endian float32 → list of floats widened to binary64."""
    a = array("f")
    try:
        a.frombytes(blob)
    except (ValueError, TypeError):
        raise FormatError(f"stored vector of {len(blob)} bytes is not packed float32",
                          "the database may be damaged; run doctor") from None
    if not _LITTLE:
        a.byteswap()
    return a.tolist()


# ------------------------------------------------------------------ json

def _depth_error() -> TooLarge:
    return TooLarge(f"JSON value nesting depth exceeds {MAX_JSON_VALUE_DEPTH}",
                    "flatten deeply nested arrays and objects")


def json_value(raw: JSON) -> Value:
    """{"json": raw}: canonical text, depth ≤ 64, at most 1 MiB; always inline (tag 10)."""
    try:
        b = dumps_bytes(raw)
    except ValueTypeError:
        if exceeds_depth(raw, MAX_JSON_VALUE_DEPTH):
            raise _depth_error() from None
        raise
    if b.count(b"[") + b.count(b"{") > MAX_JSON_VALUE_DEPTH and exceeds_depth(raw, MAX_JSON_VALUE_DEPTH):
        raise _depth_error()
    if len(b) > MAX_VALUE_BYTES:
        raise _too_large("canonical JSON", len(b))
    return Value(TAG_JSON, b.decode("utf-8"), None)


# ------------------------------------------------------------------ wire input

@overload
def _wrapper(raw: dict[Any, JSON], allow_missing: Literal[False]) -> Value | RefWire: ...


@overload
def _wrapper(raw: dict[Any, JSON], allow_missing: bool) -> Value | RefWire | _Missing: ...


def _wrapper(raw: dict[Any, JSON], allow_missing: bool) -> Value | RefWire | _Missing:
    if len(raw) != 1:
        raise ValueTypeError(f"value object {short_repr(raw)} is not a typed wrapper",
                             "wrap literal objects as {\"json\": ...}; nested entity maps need a ref attribute")
    ((k, x),) = raw.items()
    if k == "ref":
        return RefWire(x)
    if k == "instant":
        return Value(TAG_INSTANT, parse_instant(x), None)
    if k == "bytes":
        return bytes_value(decode_base64(x))
    if k == "vector":
        return vector_value(x)
    if k == "json":
        return json_value(x)
    if k == "missing":
        if not allow_missing:
            raise ValueTypeError("{\"missing\": true} is not a value",
                                 "use it only as the expected or desired value of a cas operation")
        if x is True:
            return MISSING
        raise ValueTypeError(f"invalid CAS sentinel {short_repr(raw)}", "the sentinel must be {\"missing\": true}")
    if k == "text_ref":
        raise ValueTypeError("text_ref is not a wire tag", "write long text as a plain string")
    raise ValueTypeError(f"unknown typed wrapper {short_repr(k)}",
                         "use ref, instant, bytes, vector or json ({\"tmp\": ...} and {\"eid\": ...} "
                         "are selectors: write {\"ref\": {\"tmp\": ...}})")


@overload
def from_wire(raw: JSON, *, allow_missing: Literal[False] = False) -> Value | RefWire: ...


@overload
def from_wire(raw: JSON, *, allow_missing: bool) -> Value | RefWire | _Missing: ...


def from_wire(raw: JSON, *, allow_missing: bool = False) -> Value | RefWire | _Missing:
    """A JSON value position (02 §3.1) → Value | RefWire | MISSING."""
    t = type(raw)
    if t is str:
        return text_value(raw)
    if t is int:
        return _int_value(raw)
    if t is bool:
        return Value(TAG_BOOL, 1 if raw else 0, None)
    if t is dict:
        return _wrapper(raw, allow_missing)
    if t is float:
        return _float_value(raw)
    if raw is None:
        raise ValueTypeError("null is not a fact value", "wrap it as {\"json\": null} when null is domain data")
    if t is bytes:
        return bytes_value(raw)
    base: Any
    for base in (str, int, float, dict):  # subclasses: IntEnum, str enums, OrderedDict, ...
        if isinstance(raw, base):
            return from_wire(base.__str__(raw) if base is str else base(raw), allow_missing=allow_missing)
    if isinstance(raw, (list, tuple)):
        raise ValueTypeError(f"array {short_repr(raw)} is not a single value",
                             "arrays are cardinality-many syntax; wrap a literal array as {\"json\": [...]}")
    raise ValueTypeError(f"unsupported fact value {short_repr(raw)}", "use a JSON scalar or a typed wrapper")


def _mismatch(raw: object, tag: str) -> ValueTypeError:
    return ValueTypeError(f"wire value {short_repr(raw)} does not match logical tag {tag!r}",
                          "write the value in the canonical form of its tag")


_WRAPPED_TAGS = frozenset(("instant", "bytes", "vector", "json", "ref"))


def from_tagged(raw: JSON, tag_name: str) -> Value | RefWire:
    """A portable (event/snapshot) value with its logical tag (04 §5.2) → Value | RefWire."""
    t = type(raw)
    if tag_name == "text":
        if t is str:
            return text_value(raw)
    elif tag_name == "int":
        if t is int:
            return _int_value(raw)
    elif tag_name == "float":
        if t is float:
            return _float_value(raw)
        if t is int:
            _int_value(raw)
            return _float_value(float(raw))
    elif tag_name == "bool":
        if t is bool:
            return Value(TAG_BOOL, 1 if raw else 0, None)
    elif type(tag_name) is str and tag_name in _WRAPPED_TAGS:
        if t is dict and (len(raw) != 1 or tag_name in raw):
            return _wrapper(raw, False)  # several keys: raises "not a typed wrapper"
    else:
        raise ValueTypeError(f"wire value tag {short_repr(tag_name)} is invalid",
                             "use one of " + ", ".join(sorted(LOGICAL_TYPES)))
    raise _mismatch(raw, tag_name)


# ------------------------------------------------------------------ rendering

def _b64(b: bytes) -> str:
    return binascii.b2a_base64(b, newline=False).decode("ascii")


def render(t: int, v: Any, blob: Any, ref: Callable[[int], object]) -> JSON:
    """A stored (t, v, blob) → its JSON wire form (02 §3.2); ``ref`` maps an id to a selector.
    (``v`` and ``blob`` are typed ``Any``: which column type they hold is decided by ``t``.)"""
    if t == TAG_TEXT or t == TAG_INT:
        return v
    if t == TAG_REF:
        return {"ref": ref(v)}
    if t == TAG_BOOL:
        return v != 0
    if t == TAG_FLOAT:
        return float(v)
    if t == TAG_INSTANT:
        return {"instant": format_instant(v)}
    if t == TAG_LONG_TEXT:
        return blob
    if t == TAG_JSON:
        return {"json": loads(v)}
    if t == TAG_BYTES:
        return {"bytes": _b64(v)}
    if t == TAG_LONG_BYTES:
        return {"bytes": _b64(blob)}
    if t == TAG_VECTOR:
        return {"vector": render_vector(blob)}
    raise FormatError(f"unknown physical value tag {short_repr(t)}", "the database may be damaged; run doctor")
