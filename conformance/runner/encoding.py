"""JSON as cases write it (strict loading, ``1e400`` for overflow) and canonical JSON (spec 02 §4)
for the ``apply``/``restore`` streams and for checking ``tail``/``snapshot`` bytes.

Stdlib only: the runner also runs under the published runtime's Python.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .outcomes import CaseFormatError


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CaseFormatError(f"duplicate key {key!r} in case JSON")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise CaseFormatError(f"non-standard JSON literal {name} in case JSON")


def loads_strict(text: str) -> Any:
    """Parse JSON rejecting duplicate keys and NaN/Infinity literals."""
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def dumps_json(value: Any, *, ascii_only: bool = False, separators: tuple[str, str] = (",", ":")) -> str:
    """Serialize case JSON. Unlike ``json.dumps`` it writes an infinite float as
    ``1e400`` / ``-1e400`` (the literal that parses to it), so case data that
    tests overflow survives a round trip; NaN is refused."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        if value != value:
            raise ValueError("NaN cannot appear in case JSON")
        if value in (float("inf"), float("-inf")):
            return "1e400" if value > 0 else "-1e400"
        return repr(value)
    if isinstance(value, int):
        return json.dumps(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=ascii_only)
        # keep case files readable and encodable: escape DEL, C1 controls, line and
        # paragraph separators and lone surrogates
        return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    if isinstance(value, dict):
        item, sep = separators
        return "{" + item.join(json.dumps(str(k), ensure_ascii=ascii_only) + sep
                               + dumps_json(v, ascii_only=ascii_only, separators=separators)
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + separators[0].join(
            dumps_json(v, ascii_only=ascii_only, separators=separators) for v in value) + "]"
    raise TypeError(f"cannot serialize {type(value).__name__} as case JSON")


def format_float(x: float) -> str:
    """Spec 02 §4.2."""
    if x != x or x in (float("inf"), float("-inf")):
        raise CaseFormatError("a non-finite float has no canonical JSON form")
    if x == 0.0:
        return "0"
    if x.is_integer() and -(2**63) <= int(x) <= 2**63 - 1:
        return str(int(x))
    mant, _, exp_text = repr(abs(x)).partition("e")
    exp = int(exp_text) if exp_text else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    point = (len(ip) + exp) if ip != "0" else exp - (len(fp) - len(fp.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    sign = "-" if x < 0 else ""
    if 1e-6 <= abs(x) < 1e21 and not x.is_integer():
        if point <= 0:
            text = "0." + "0" * (-point) + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits))
        else:
            text = digits[:point] + "." + digits[point:]
        return sign + text
    e = point - 1
    m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{m}e{'+' if e >= 0 else '-'}{abs(e)}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _canonical_str(value: str) -> str:
    if _SURROGATE.search(value):
        raise CaseFormatError(f"a lone surrogate has no canonical JSON form: {value!r}")
    return json.dumps(value, ensure_ascii=False)  # = json.encoder.encode_basestring


def canonical_dumps(value: Any) -> str:
    """Canonical JSON (spec 02 §4): code-point key order, no whitespace, UTF-8 strings,
    02 §4.2 floats, 64-bit integers. Raises CaseFormatError for what it cannot encode."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        if not -(2**63) <= value <= 2**63 - 1:
            raise CaseFormatError(f"integer {value} is outside signed 64-bit")
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return _canonical_str(value)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise CaseFormatError("object keys must be strings")
        return "{" + ",".join(_canonical_str(k) + ":" + canonical_dumps(value[k])
                              for k in sorted(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_dumps(v) for v in value) + "]"
    raise CaseFormatError(f"{type(value).__name__} has no canonical JSON form")


def stream_text(items: list[Any]) -> str:
    """The NDJSON text of an ``apply`` step: each record in canonical JSON, each raw
    line verbatim, every line followed by one LF (an empty list gives ``""``)."""
    return "".join((item if isinstance(item, str) else canonical_dumps(item)) + "\n"
                   for item in items)


def parse_ndjson(text: str) -> list[Any]:
    """Parse a canonical NDJSON stream (``tail`` output): LF-only splitting, every
    line LF-terminated and byte-identical to the canonical form of its record."""
    if not text:
        return []
    if not text.endswith("\n"):
        raise ValueError(f"the stream does not end with LF: {text[-80:]!r}")
    records = []
    for number, line in enumerate(text[:-1].split("\n"), 1):
        record = loads_strict(line)
        canonical = canonical_dumps(record)
        if canonical != line:
            raise ValueError(f"line {number} is not canonical JSON: {line[:300]!r} "
                             f"(canonical: {canonical[:300]!r})")
        records.append(record)
    return records


def seal(records: list[Any]) -> list[Any]:
    """A snapshot/1 body (header, receipts, facts; no footer) plus its footer (spec 05 §1):
    the counts and the SHA-256 over every record's canonical bytes + LF. Used to write
    re-sealed mutations (05 §2.8) into cases."""
    body = "".join(canonical_dumps(record) + "\n" for record in records)
    receipts = sum(1 for r in records if isinstance(r, dict) and "receipt" in r)
    facts = sum(1 for r in records if isinstance(r, dict) and "fact" in r)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return [*records, {"facts": facts, "fgraph": "end", "receipts": receipts, "sha256": digest}]

