"""Canonical JSON output (02 §4) and strict JSON input (02 §5) behave exactly as specified."""

from __future__ import annotations

import enum
import json
from collections import OrderedDict
import math
import struct
import sys
from json.encoder import encode_basestring

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgraph.core.canonical import (
    MAX_DOCUMENT_DEPTH,
    MAX_JSON_VALUE_DEPTH,
    dumps,
    dumps_bytes,
    exceeds_depth,
    format_float,
    json_depth,
    loads,
)
from fgraph.core.errors import TooLarge, ValueTypeError


# The reference implementation of 02 §4.2, verbatim.
def ref_format_float(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        raise TypeError("non-finite float")
    if x == 0.0:
        return "0"
    if x.is_integer() and -(2**63) <= int(x) <= 2**63 - 1:
        return str(int(x))
    r = repr(abs(x))
    mant, _, exp = r.partition("e")
    exp = int(exp) if exp else 0
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


# An independent, slow formulation of the canonical serialization.
def ref_dumps(o) -> str:
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, str):
        o.encode("utf-8")
        return encode_basestring(o)
    if isinstance(o, int):
        assert -(2**63) <= o < 2**63
        return str(o)
    if isinstance(o, float):
        return ref_format_float(o)
    if isinstance(o, (list, tuple)):
        return "[" + ",".join(ref_dumps(v) for v in o) + "]"
    assert isinstance(o, dict)
    return "{" + ",".join(encode_basestring(k) + ":" + ref_dumps(o[k]) for k in sorted(o)) + "}"


FLOAT_TABLE = [
    (0.0, "0"), (-0.0, "0"), (1.0, "1"), (-1.0, "-1"), (1250.0, "1250"),
    (2.0**60, "1152921504606846976"), (-(2.0**63), "-9223372036854775808"),
    (1e16, "10000000000000000"), (9.223372036854775e18, "9223372036854774784"),
    (2.0**63, "9.223372036854776e+18"), (1e20, "1e+20"), (1e21, "1e+21"), (2e63, "2e+63"),
    (1e-7, "1e-7"), (5e-7, "5e-7"), (9.9e-7, "9.9e-7"), (1e-6, "0.000001"), (0.000001, "0.000001"),
    (0.0000025, "0.0000025"), (123.456, "123.456"), (0.1, "0.1"), (-0.1, "-0.1"),
    (1.5e300, "1.5e+300"), (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (1.2345678901234567e19, "1.2345678901234567e+19"), (1e15 + 0.5, "1000000000000000.5"),
    (1.2345678901234568e20, "1.2345678901234568e+20"), (123456.789e10, "1234567890000000"), (0.00001, "0.00001"), (3e-5, "0.00003"), (1.5e16 + 2, "15000000000000002"),
    (-1e-7, "-1e-7"), (1.7976931348623157e308 * -1, "-1.7976931348623157e+308"),
]

EDGE_FLOATS = [x for x, _ in FLOAT_TABLE] + [
    2.0**53, 2.0**53 + 2, 2.0**63 - 1024, -(2.0**63) - 2048, 1e21 - 65536, 9.999999999999999e20,
    1e-6 * (1 - 2**-52), 2.2250738585072014e-308, 2.225073858507201e-308, 0.1 + 0.2, 1 / 3, 1e22,
]


@pytest.mark.parametrize(("x", "text"), FLOAT_TABLE)
def test_format_float_table(x, text):
    assert format_float(x) == text
    assert ref_format_float(x) == text
    assert dumps(x) == text
    assert dumps([x]) == f"[{text}]"


@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_rejected(x):
    with pytest.raises(ValueTypeError):
        format_float(x)
    for doc in (x, [x], {"a": x}, {"a": [1, x]}):
        with pytest.raises(ValueTypeError):
            dumps(doc)


@settings(max_examples=2000)
@given(st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                 st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0])
                 .filter(math.isfinite),
                 st.integers(-(2**64), 2**64).map(float),
                 st.sampled_from(EDGE_FLOATS)))
def test_format_float_matches_reference(x):
    assert format_float(x) == ref_format_float(x)
    assert float(format_float(x)) == x


def test_worked_example():
    value = {"z": 1.0, "a": -0.0, "n": 1e-7, "numbers": [1e-7, 1e-6, 1e20, 1e21, 1250.0, -0.0]}
    assert dumps(value) == '{"a":0,"n":1e-7,"numbers":[1e-7,0.000001,1e+20,1e+21,1250,0],"z":1}'


@pytest.mark.parametrize(("value", "text"), [
    ('"', r'"\""'), ("\\", r'"\\"'), ("\n", r'"\n"'), ("\r", r'"\r"'), ("\t", r'"\t"'),
    ("\b", r'"\b"'), ("\f", r'"\f"'), ("\x00", r'"\u0000"'), ("\x1f", r'"\u001f"'),
    ("\x0b", r'"\u000b"'), ("/", '"/"'), ("\x7f", '"\x7f"'), ("\x80\x9f", '"\x80\x9f"'),
    ("\u2028\u2029", '"\u2028\u2029"'), ("é", '"é"'), ("\U0001f600", '"\U0001f600"'),
    ("\ufeff\uffff", '"\ufeff\uffff"'),
])
def test_string_escapes(value, text):
    assert dumps(value) == text
    assert dumps({value: value}) == "{" + text + ":" + text + "}"


def test_string_escapes_equal_encode_basestring_for_every_code_point():
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert dumps(every) == encode_basestring(every)
    for c in range(0x20):
        assert dumps(chr(c)) == encode_basestring(chr(c))


@pytest.mark.parametrize("bad", ["\ud800", "a\udc00b", "\udfff"])
def test_lone_surrogates_rejected(bad):
    for doc in (bad, [bad], {"k": bad}, {bad: 1}, {"k": [1.5, bad]}):
        with pytest.raises(ValueTypeError):
            dumps(doc)


def test_key_order_is_code_point_order():
    doc = {"\U0001f600": 1, "\ue000": 2, "b": 3, "a": 4, "B": 5, "": 6, "é": 7}
    assert dumps(doc) == '{"":6,"B":5,"a":4,"b":3,"é":7,"\ue000":2,"\U0001f600":1}'
    assert dumps({"\U0001f600": 1.5, "\ue000": 2.5}) == '{"\ue000":2.5,"\U0001f600":1.5}'


@pytest.mark.parametrize(("value", "text"), [
    (None, "null"), (True, "true"), (False, "false"), (0, "0"), (-1, "-1"),
    (2**63 - 1, "9223372036854775807"), (-(2**63), "-9223372036854775808"),
    ([True, 1, 1.0], "[true,1,1]"), ((1, (2,)), "[1,[2]]"), ({}, "{}"), ([], "[]"),
    ({"b": {"d": [], "c": None}, "a": [{}]}, '{"a":[{}],"b":{"c":null,"d":[]}}'),
])
def test_literals_and_structure(value, text):
    assert dumps(value) == text
    assert dumps_bytes(value) == text.encode("utf-8")


@pytest.mark.parametrize("bad", [
    2**63, -(2**63) - 1, 2**64 - 1, 2**64, 10**30, pytest.param(10**5000, id="10**5000"), {1: 2}, {None: 1}, {(1,): 2}, {1.5: 1},
    {b"k": 1}, {"a"}, b"x", bytearray(b"x"), object(), 1 + 2j, [2**63], {"a": {"b": 2**64}},
])
def test_rejected_values(bad):
    with pytest.raises(ValueTypeError):
        dumps(bad)
    with pytest.raises(ValueTypeError):
        dumps_bytes([1.5, bad])


def test_subclasses_are_normalized():
    class Int(enum.IntEnum):
        A = 7

    class S(str):
        def __str__(self):
            return "other"

    assert dumps({"a": Int.A, S("k"): S("v"), "f": 1.0}) == '{"a":7,"f":1,"k":"v"}'


def test_stock_encoder_table_canonical_column():
    cases = [(1e-7, "1e-7"), (1e-6, "0.000001"), (-0.0, "0"), (1.0, "1"),
             (1e16, "10000000000000000"), (1e20, "1e+20"), (2.0**63, "9.223372036854776e+18")]
    for x, text in cases:
        assert dumps(x) == text


def test_circular_and_very_deep_documents():
    a: list = []
    a.append(a)
    with pytest.raises(ValueTypeError):
        dumps(a)
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ValueTypeError):
        dumps(deep)
    deep = 1.5
    for _ in range(300):
        deep = [deep]
    assert dumps(deep) == "[" * 300 + "1.5" + "]" * 300


# ----------------------------------------------------------------- hypothesis

SAMPLED_TEXT = st.sampled_from(["", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "\U0001f600", "\ue000",
                                "\"\\/", "é", "\x85", "a\nb"])
TEXT = st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12), SAMPLED_TEXT)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(EDGE_FLOATS), TEXT)
JSON = st.recursive(SCALARS, lambda kids: st.one_of(
    st.lists(kids, max_size=5), st.dictionaries(TEXT, kids, max_size=5)), max_leaves=25)


@settings(max_examples=400)
@given(JSON)
def test_dumps_matches_reference(doc):
    text = dumps(doc)
    assert text == ref_dumps(doc)
    assert dumps_bytes(doc) == text.encode("utf-8")


@settings(max_examples=300)
@given(JSON)
def test_loads_dumps_round_trip_is_stable(doc):
    text = dumps(doc)
    back = loads(text)
    assert dumps(back) == text
    assert loads(text.encode("utf-8")) == back
    assert loads(json.dumps(doc, indent=2, ensure_ascii=True)) == back  # 1.0 == 1 numerically


@settings(max_examples=300)
@given(JSON, st.sampled_from([{}, {"indent": 1}, {"ensure_ascii": False}, {"separators": (",", ":")}]))
def test_loads_agrees_with_stdlib(doc, opts):
    text = json.dumps(doc, **opts)
    got = loads(text)
    want = json.loads(text)
    assert got == want
    assert json.dumps(got) == json.dumps(want)  # same types: 1 vs 1.0 are kept apart


# ----------------------------------------------------------------- strict input

@pytest.mark.parametrize("text", [
    '{"a":1,"a":2}', '{"a":1,"a":1}', '[{"b":{"x":1,"y":2,"x":3}}]', '{"a":1, "a" : 2}',
    "NaN", "[NaN]", "Infinity", "-Infinity", '{"a":-Infinity}',
    "", " ", "[", "]", "{", '{"a"}', '{"a":}', "[1 2]", "1 2", "[1]]", "{}{}", "[1,]", '{"a":1,}',
    "[,1]", "01", "-01", "00", "1.", ".5", "+1", "1e", "0x10", '"\x00"', '"a\nb"', '"\x1f"', "'a'",
    '"\\x41"', '"\\u12"', "tru", "nul", "True", "None", '{"a":1 "b":2}', '{a:1}', "\ufeff{}",
    "\u00a01", "1\u00a0", "\x0c1", '"\\ud800', "1" + "0" * 5000,
])
def test_strict_parse_rejects(text):
    with pytest.raises(ValueTypeError):
        loads(text)
    with pytest.raises(ValueTypeError):
        loads(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(("text", "value"), [
    (" \t\r\n[1] \n", [1]), ("1", 1), ("1.0", 1.0), ("-0", 0), ("-0.0", -0.0), ("1e2", 100.0),
    ("1E+2", 100.0), ("1e400", math.inf), ("-1e400", -math.inf), ("1e-400", 0.0),
    ("18446744073709551616", 2**64), ("-9223372036854775809", -(2**63) - 1),
    ("123456789012345678901234567890", 123456789012345678901234567890),
    ('"\\ud800"', "\ud800"), ('"\\udc00"', "\udc00"), ('"\\ud83d\\ude00"', "\U0001f600"),
    ('"\\u00e9\\/\\b"', "é/\b"), ('"\x7f\u2028"', "\x7f\u2028"), ('{"a":[{}],"b":null}', {"a": [{}], "b": None}),
    ('{"b":1,"a":2}', {"b": 1, "a": 2}), ("[true,false]", [True, False]),
])
def test_strict_parse_accepts(text, value):
    got = loads(text)
    assert got == value
    assert type(got) is type(value)
    assert loads(text.encode()) == value


def test_float_and_int_stay_apart():
    got = loads('[1,1.0,1e0,-0,9223372036854775807]')
    assert [type(x) for x in got] == [int, float, float, int, int]


def test_invalid_utf8_bytes():
    for b in (b'"\xff"', b"\xc3", b'["\xed\xa0\x80"]', b"\xef\xbb\xbf{}", b"\xff\xfe[\x001\x00]\x00"):
        with pytest.raises(ValueTypeError):
            loads(b)


def test_non_text_input():
    with pytest.raises(ValueTypeError):
        loads(12)  # type: ignore[arg-type]
    assert loads(bytearray(b"[1]")) == [1]
    assert loads(memoryview(b"[2]")) == [2]


def _nest(n: int, inner: str = "1", obj: bool = False) -> str:
    if obj:
        return '{"a":' * n + inner + "}" * n
    return "[" * n + inner + "]" * n


@pytest.mark.parametrize("obj", [False, True])
def test_document_depth_limit(obj):
    assert json_depth(loads(_nest(80, obj=obj))) == 80
    assert loads(_nest(79, "[]", obj=obj)) is not None
    assert loads(_nest(79, "{}", obj=obj)) is not None
    for text in (_nest(81, obj=obj), _nest(80, "[]", obj=obj), _nest(80, "{}", obj=obj), _nest(200, obj=obj),
                 _nest(5000, obj=obj), _nest(100000, obj=obj)):
        with pytest.raises(TooLarge):
            loads(text)
        with pytest.raises(TooLarge):
            loads(text.replace("[", "[ ").replace(":", ": "))  # the non-canonical route


def test_depth_check_is_not_fooled_by_brackets_in_strings():
    text = "[" + ",".join(['"[[[[{{{{"'] * 50) + "]"
    assert len(loads(text)) == 50
    wide = "[" + ",".join(["[[1]]"] * 200) + "]"
    assert json_depth(loads(wide)) == 3


def test_parse_errors_come_before_depth():
    with pytest.raises(ValueTypeError):
        loads("[" * 85 + '{"a":1,"a":2}' + "]" * 85)
    with pytest.raises(ValueTypeError):
        loads("[" * 85 + "NaN" + "]" * 85)
    with pytest.raises(ValueTypeError):
        loads("[" * 100 + "]" * 99)


@pytest.mark.parametrize(("value", "depth"), [
    (1, 0), ("x", 0), ([], 1), ({}, 1), ([1], 1), ([[]], 2), ({"a": [1, {"b": {}}]}, 4),
    ([1, [2, [3]], []], 3), ((1, (2,)), 2), (OrderedDict(a=OrderedDict(b=[])), 3),
])
def test_json_depth(value, depth):
    assert json_depth(value) == depth
    assert exceeds_depth(value, depth) is False
    if depth:
        assert exceeds_depth(value, depth - 1) is True


@pytest.mark.parametrize("limit", [MAX_JSON_VALUE_DEPTH, MAX_DOCUMENT_DEPTH, 3])
def test_exceeds_depth_boundaries(limit):
    def nest(n, inner):
        for _ in range(n):
            inner = [inner]
        return inner

    assert not exceeds_depth(nest(limit, 1), limit)
    assert exceeds_depth(nest(limit, []), limit)
    assert exceeds_depth(nest(limit, {}), limit)
    assert not exceeds_depth(nest(limit - 1, {"a": [1, "x"]}), limit + 1)
    assert exceeds_depth(nest(limit + 1, 1), limit)
    assert not exceeds_depth(nest(limit - 1, {"k": "\n" + " " * 400}), limit)
    assert exceeds_depth([nest(limit - 1, {"k": 1})], limit)
    assert exceeds_depth(nest(limit, {math.nan: {1}}), limit)  # not JSON: falls back to the walk
    assert json_depth(nest(3000, 1)) == 3000
    assert sys.getrecursionlimit() >= 1000
