"""Canonical JSON (02 §4) and strict JSON input (02 §5).

Speed choices (measured on a ~700-byte event dict; figures in the report):

* dumps: a pure-Python pre-scan classifies the document.  Plain documents
  (str/int64/bool/None/list/tuple/dict, the common case) go straight to orjson
  with OPT_SORT_KEYS: its escapes equal ``encode_basestring`` for every
  non-surrogate code point and UTF-8 byte order equals code-point order (both
  verified by the tests).  Documents with floats are copied with
  ``orjson.Fragment(format_float(x))``.  Anything unusual (subclasses, ints
  outside int64, NaN/inf, other types, lone surrogates, non-str keys, orjson
  errors) goes through the slow pure-Python encoder, the authority for errors.
* loads: orjson first, trusted only if orjson re-serializes the result to the
  exact input bytes.  Equal text proves there was no duplicate key (the output
  has one member per key), no integer orjson widened to float (it would print
  with "." or "e") and nothing non-strict; canonical event/snapshot lines
  always pass.  Otherwise the C-accelerated stdlib decoder parses again with
  an object_pairs_hook rejecting duplicates and a parse_constant rejecting
  NaN/Infinity; it is the authority.  ~1.5x faster than the stdlib alone.
"""

from __future__ import annotations

import json
import reprlib
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from .errors import TooLarge, ValueTypeError
from fgraph.core.limits import INT64_MAX, INT64_MIN

if TYPE_CHECKING:
    from fgraph.core.types import JSON

MAX_DOCUMENT_DEPTH = 80
MAX_JSON_VALUE_DEPTH = 64

_SORT = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
         | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS)
_Fragment = getattr(orjson, "Fragment", None)


# --------------------------------------------------------------------- floats

def format_float(x: float) -> str:
    """The canonical float text of 02 §4.2 (equal to the spec's reference)."""
    if x - x != 0.0:  # NaN or ±inf
        raise ValueTypeError(
            f"float {x!r} is not finite",
            "NaN and infinity cannot be stored; use a finite number")
    if x == 0.0:
        return "0"
    if x.is_integer() and -9223372036854775808.0 <= x < 9223372036854775808.0:
        return str(int(x))
    r = repr(abs(x))
    if "e" not in r:
        # Not integral here (integral floats >= 2**63 always repr with "e"); repr
        # prints plain digits only for 1e-4 <= |x| < 1e16, which is canonical.
        return r if x > 0 else "-" + r
    mant, _, exp_text = r.partition("e")
    exp = int(exp_text) if exp_text else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    point = (len(ip) + exp) if ip != "0" else exp - (len(fp) - len(fp.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    sign = "-" if x < 0 else ""
    if 1e-6 <= abs(x) < 1e21 and not x.is_integer():
        if point <= 0:
            s = "0." + "0" * (-point) + digits
        elif point >= len(digits):
            s = digits + "0" * (point - len(digits))
        else:
            s = digits[:point] + "." + digits[point:]
        return sign + s
    e = point - 1
    m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{m}e{'+' if e >= 0 else '-'}{abs(e)}"


# --------------------------------------------------------------------- dumps

def _scan(o: Any) -> int:
    """0: orjson can encode it as is; 1: contains floats; 2: needs the slow path."""
    t = type(o)
    if t is dict:
        it = o.values()
    elif t is list or t is tuple:
        it = o
    elif t is str or t is bool or o is None:
        return 0
    elif t is int:
        return 0 if INT64_MIN <= o <= INT64_MAX else 2
    elif t is float:
        return 1 if o - o == 0.0 else 2
    else:
        return 2
    k = 0
    for v in it:
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is int:
            if INT64_MIN <= v <= INT64_MAX:
                continue
            return 2
        if t is float:
            if v - v == 0.0:
                k = 1
                continue
            return 2
        if t is dict or t is list or t is tuple:
            r = _scan(v)
            if r == 2:
                return 2
            k |= r
            continue
        return 2
    return k


_NESTED = (float, dict, list, tuple)


def _fragments(o: Any) -> JSON:
    """Copy of a scanned document with every float replaced by its canonical text."""
    t = type(o)
    if t is float:
        return _Fragment(format_float(o))  # type: ignore[misc]  # called only when _Fragment is set (dumps_bytes)
    # Leaves other than floats are kept as they are without a call each (most of a document).
    if t is dict:
        return {k: _fragments(v) if type(v) in _NESTED else v for k, v in o.items()}
    if t is list or t is tuple:
        return [_fragments(v) if type(v) in _NESTED else v for v in o]
    return o


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60


def short_repr(x: object) -> str:
    """A bounded repr for error messages (huge ints and containers included)."""
    try:
        return _REPR.repr(x)
    except ValueError:  # an int with more digits than Python prints
        return f"<{type(x).__name__}>"


def int_text(i: int) -> str:
    """An integer for an error message: its digits, or its size when Python refuses to print that many."""
    try:
        return int.__repr__(i)
    except ValueError:  # more digits than Python prints
        return f"of {i.bit_length()} bits"


def _enc(o: object) -> str:
    """The slow, authoritative encoder (also normalizes subclasses of the JSON types)."""
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, str):
        return encode_basestring(o)
    if isinstance(o, int):
        if INT64_MIN <= o <= INT64_MAX:
            return int.__repr__(o)
        raise ValueTypeError(f"integer {int_text(o)} is outside the signed 64-bit range",
                             "store it as text (or as a float if precision may be lost)")
    if isinstance(o, float):
        return format_float(float(o))
    if isinstance(o, dict):
        for k in o:
            if not isinstance(k, str):
                raise ValueTypeError(f"JSON object key {short_repr(k)} is not a string", "use text keys only")
        items = sorted(((str.__str__(k), v) for k, v in o.items()), key=lambda kv: kv[0])
        return "{" + ",".join(encode_basestring(k) + ":" + _enc(v) for k, v in items) + "}"
    if isinstance(o, (list, tuple)):
        return "[" + ",".join(map(_enc, o)) + "]"
    raise ValueTypeError(f"value {short_repr(o)} of type {type(o).__name__} is not JSON",
                         "use only str, int, float, bool, None, lists and dicts with text keys "
                         "(wrap bytes as {\"bytes\": base64})")


def _slow_dumps(obj: object) -> bytes:
    try:
        text = _enc(obj)
    except RecursionError:
        raise ValueTypeError("JSON document is nested too deeply or is circular",
                             "flatten the structure") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueTypeError(
            f"text {text[max(0, exc.start - 30):exc.end + 30]!r} contains the lone surrogate "
            f"{text[exc.start:exc.end]!r}", "remove unpaired surrogate code points") from None


def dumps_bytes(obj: object) -> bytes:
    """Canonical JSON of ``obj`` as UTF-8 bytes (02 §4); ValueTypeError if not encodable."""
    try:
        kind = _scan(obj)
    except RecursionError:
        kind = 2
    if kind == 0:
        try:
            return orjson.dumps(obj, option=_SORT)
        except orjson.JSONEncodeError:
            pass
    elif kind == 1 and _Fragment is not None:
        try:
            return orjson.dumps(_fragments(obj), option=_SORT)
        except (orjson.JSONEncodeError, RecursionError):
            pass
    return _slow_dumps(obj)


def dumps(obj: object) -> str:
    """Canonical JSON of ``obj`` as text (02 §4); ValueTypeError if not encodable."""
    return dumps_bytes(obj).decode("utf-8")


# --------------------------------------------------------------------- loads

def _pairs(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueTypeError(
                    f"duplicate JSON key {short_repr(k)}",
                    "keep one value per key so the intent is unambiguous")
            seen.add(k)
    return d


def _reject_constant(name: str) -> NoReturn:
    raise ValueTypeError(f"JSON contains the non-finite number {name}",
                         "use a finite JSON number")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_reject_constant)
_WS = " \t\n\r"
_WSB = b" \t\n\r"
_MISS = object()


def _strict(s: str) -> JSON:
    try:
        return _DECODER.decode(s)
    except json.JSONDecodeError as exc:
        raise ValueTypeError(
            f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            "correct the JSON syntax") from None
    except RecursionError:
        raise _too_deep() from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's own limit, with advice meant for programmers
            raise ValueTypeError("invalid JSON (an integer has more than 4300 digits)",
                                 f"integers must fit in int64 ({INT64_MIN}..{INT64_MAX}); "
                                 "write larger numbers as text") from None
        raise ValueTypeError(f"invalid JSON ({exc})", "correct the JSON value") from None


_SCALARS = (str, int, float, bool, type(None))


def _deeper_than(v: object, limit: int) -> bool:
    if isinstance(v, dict):
        v = v.values()
    elif not isinstance(v, (list, tuple)):
        return False
    if limit <= 0:
        return True
    limit -= 1
    for x in v:
        if type(x) not in _SCALARS and _deeper_than(x, limit):
            return True
    return False


def exceeds_depth(value: object, limit: int) -> bool:
    """True when ``value`` has more than ``limit`` nested arrays/objects."""
    if limit >= MAX_DOCUMENT_DEPTH // 2:
        # Indented orjson output puts a member inside k containers at 2k spaces,
        # so no line indented by 2*limit proves depth <= limit (and is cheap).
        try:
            if b"\n" + b" " * (2 * limit) not in orjson.dumps(value, option=orjson.OPT_INDENT_2):
                return False
        except (orjson.JSONEncodeError, RecursionError):
            pass
    return _deeper_than(value, limit)


def _too_deep() -> TooLarge:
    return TooLarge(f"JSON nesting depth exceeds {MAX_DOCUMENT_DEPTH}",
                    "flatten deeply nested arrays and objects")


def loads(text: str | bytes | bytearray | memoryview) -> JSON:
    """Parse one JSON document strictly (02 §5); ValueTypeError / TooLarge on rejection."""
    s: str | None
    b: bytes | None
    if isinstance(text, str):
        s = str.__str__(text).strip(_WS)
        try:
            b = s.encode("utf-8")
        except UnicodeEncodeError:  # raw lone surrogates: only the stdlib parser copes
            b = None
    elif isinstance(text, (bytes, bytearray, memoryview)):
        b, s = bytes(text).strip(_WSB), None
    else:
        raise ValueTypeError(f"cannot parse {type(text).__name__} as JSON",
                             "pass the document as str or UTF-8 bytes")
    obj = _MISS
    if b is not None:
        try:
            obj = orjson.loads(b)
            if orjson.dumps(obj) != b:  # not orjson's own spelling: let the stdlib decide
                obj = _MISS
        except (orjson.JSONDecodeError, orjson.JSONEncodeError):
            obj = _MISS
    if obj is _MISS:
        if s is None:
            try:
                s = b.decode("utf-8")  # type: ignore[union-attr]  # s is None only when b is set
            except UnicodeDecodeError as exc:
                raise ValueTypeError(f"JSON input is not valid UTF-8 (byte {exc.start})",
                                     "encode the document as UTF-8") from None
        obj = _strict(s)
    n = b.count(b"[") + b.count(b"{") if b is not None else s.count("[") + s.count("{")  # type: ignore[union-attr]  # b or s is set
    if n > MAX_DOCUMENT_DEPTH and exceeds_depth(obj, MAX_DOCUMENT_DEPTH):
        raise _too_deep()
    return obj


def json_depth(value: object) -> int:
    """Number of arrays/objects on the deepest path (an empty container counts)."""
    best = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, (list, tuple)):
            continue
        best = max(best, d)
        stack.extend((x, d + 1) for x in v if type(x) not in _SCALARS)
    return best
