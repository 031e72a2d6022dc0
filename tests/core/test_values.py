"""Fact values are accepted, stored (tag, v, blob) and rendered exactly as 02 §1–§3 and §6 specify."""

from __future__ import annotations

import base64
import enum
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgraph.core.canonical import dumps
from fgraph.core.errors import FormatError, TooLarge, ValueTypeError
from fgraph.core.values import (
    INDIRECT_TAGS,
    INSTANT_MAX,
    INSTANT_MIN,
    LOGICAL_TYPES,
    MAX_VALUE_BYTES,
    MISSING,
    TAG_BOOL,
    TAG_BYTES,
    TAG_FLOAT,
    TAG_INSTANT,
    TAG_INT,
    TAG_JSON,
    TAG_LONG_BYTES,
    TAG_LONG_TEXT,
    TAG_REF,
    TAG_TEXT,
    TAG_VECTOR,
    RefWire,
    Value,
    format_instant,
    from_tagged,
    from_wire,
    indirect_key,
    is_entity_map,
    logical_name,
    pack_vector,
    parse_instant,
    render,
    render_vector,
)


def rendered(value: Value):
    return render(value.t, value.v, value.blob, lambda i: i)


def test_tag_constants():
    assert (TAG_REF, TAG_BOOL, TAG_INT, TAG_FLOAT, TAG_TEXT, TAG_INSTANT, TAG_BYTES, TAG_VECTOR,
            TAG_LONG_TEXT, TAG_LONG_BYTES, TAG_JSON) == tuple(range(11))
    assert LOGICAL_TYPES == ("bool", "int", "float", "text", "instant", "bytes", "vector", "json", "ref")
    assert [logical_name(t) for t in range(11)] == [
        "ref", "bool", "int", "float", "text", "instant", "bytes", "vector", "text", "bytes", "json"]
    assert INDIRECT_TAGS == (7, 8, 9)
    assert MAX_VALUE_BYTES == 1048576
    assert (INSTANT_MIN, INSTANT_MAX) == (-62135596800000000, 253402300799999999)
    assert Value(8, b"k", "t").logical == "text"
    for bad in (-1, 11, "1", None):
        with pytest.raises(FormatError):
            logical_name(bad)
        with pytest.raises(FormatError):
            render(bad, 1, None, lambda i: i)


# ----------------------------------------------------------------- indirect keys

@pytest.mark.parametrize(("raw", "tag", "payload", "key"), [
    ({"vector": [0.1, -0.2]}, 7, "CDCCCC3DCDCC4CBE",
     "1CA8C9BC9829B8DF7A09A732F2D6C789C2933C2B8CA873C93985EF98B06706AB"),
    ("x" * 257, 8, "78" * 257, "ACD8119901E076AC8E31F2229D0422F64E69224B0C85AB0BD37A9D04EADEAF63"),
    ("a" * 257, 8, "61" * 257, "2a99e8adb5dd1bd09413a1df378c45c14a50b13521a741ac35aa521094bdf7ef"),
    ({"bytes": base64.b64encode(b"a" * 257).decode()}, 9, "61" * 257,
     "d49b9f26c550f91ee6dd4a64820876f79f7610439a460fc4bc4ed03b77d3a6fe"),
])
def test_indirect_key_verified_examples(raw, tag, payload, key):
    payload_b = bytes.fromhex(payload)
    assert indirect_key(tag, payload_b) == bytes.fromhex(key)
    value = from_wire(raw)
    assert value.t == tag
    assert value.v == bytes.fromhex(key)
    assert value.blob == (payload_b.decode() if tag == 8 else payload_b)


def test_domain_separation():
    assert from_wire("a" * 257).v != from_wire(b"a" * 257).v


# ----------------------------------------------------------------- text

@pytest.mark.parametrize(("text", "tag"), [
    ("", TAG_TEXT), ("x" * 256, TAG_TEXT), ("x" * 257, TAG_LONG_TEXT), ("é" * 128, TAG_TEXT),
    ("é" * 128 + "a", TAG_LONG_TEXT), ("\U0001f600" * 64, TAG_TEXT), ("\U0001f600" * 64 + "a", TAG_LONG_TEXT),
    ("a\x00b\x1f\u2028", TAG_TEXT), ("x" * MAX_VALUE_BYTES, TAG_LONG_TEXT),
])
def test_text_threshold(text, tag):
    value = from_wire(text)
    assert value.t == tag
    if tag == TAG_TEXT:
        assert value == Value(TAG_TEXT, text, None)
    else:
        assert value.blob == text and value.v == indirect_key(8, text.encode())
    assert rendered(value) == text
    assert value.logical == "text"


@pytest.mark.parametrize("text", ["x" * (MAX_VALUE_BYTES + 1), "é" * (MAX_VALUE_BYTES // 2) + "a"])
def test_text_too_large(text):
    with pytest.raises(TooLarge):
        from_wire(text)


@pytest.mark.parametrize("text", ["\ud800", "a\udc00", "x" * 300 + "\udfff"])
def test_text_lone_surrogate(text):
    with pytest.raises(ValueTypeError):
        from_wire(text)


# ----------------------------------------------------------------- scalars

@pytest.mark.parametrize(("raw", "expected"), [
    (True, Value(TAG_BOOL, 1)), (False, Value(TAG_BOOL, 0)), (0, Value(TAG_INT, 0)),
    (2**63 - 1, Value(TAG_INT, 2**63 - 1)), (-(2**63), Value(TAG_INT, -(2**63))),
    (1.0, Value(TAG_FLOAT, 1.0)), (1e20, Value(TAG_FLOAT, 1e20)), (-0.0, Value(TAG_FLOAT, -0.0)),
    (1e-7, Value(TAG_FLOAT, 1e-7)),
])
def test_scalars(raw, expected):
    value = from_wire(raw)
    assert value == expected
    assert type(value.v) is type(expected.v)
    assert rendered(value) == raw and type(rendered(value)) is type(raw)


@pytest.mark.parametrize("raw", [2**63, -(2**63) - 1, 2**64, pytest.param(10**5000, id="10**5000"), math.inf, -math.inf, math.nan, None,
                                 [1], [], (1,), {}, {"a/b": 1}, {"ref": 1, "x": 2}, {"text_ref": "x"},
                                 {"tmp": "t"}, {"eid": "x"}, {"frob": 1}, {"missing": True}, {"missing": False},
                                 bytearray(b"x"), object(), {"json": 1, "bytes": ""}])
def test_rejected_wire_values(raw):
    with pytest.raises(ValueTypeError):
        from_wire(raw)


def test_subclasses_and_python_bytes():
    class Int(enum.IntEnum):
        A = 3

    assert from_wire(Int.A) == Value(TAG_INT, 3) and type(from_wire(Int.A).v) is int
    assert from_wire(b"abc") == Value(TAG_BYTES, b"abc")
    assert from_wire({"bytes": b"abc"}) == Value(TAG_BYTES, b"abc")


def test_ref_and_missing():
    assert from_wire({"ref": "x"}) == RefWire("x")
    assert from_wire({"ref": {"tmp": "t"}}) == RefWire({"tmp": "t"})
    assert from_wire({"ref": True}) == RefWire(True)  # the caller validates selectors
    assert from_wire({"missing": True}, allow_missing=True) is MISSING
    for bad in ({"missing": False}, {"missing": 1}, {"missing": None}, {"missing": True, "x": 1}):
        with pytest.raises(ValueTypeError):
            from_wire(bad, allow_missing=True)
    assert from_wire(5, allow_missing=True) == Value(TAG_INT, 5)


@pytest.mark.parametrize(("raw", "expected"), [
    ({}, True), ({"a/b": 1}, True), ({"id": "x", "a/b": 1}, True), ({"tmp": "t"}, True),
    ({"eid": "4fdae471-2e64-57b7-bc98-bcc828aa539c"}, True), ({"missing": True}, True),
    ({"text_ref": "x"}, True), ({"ref": "x", "other": 1}, True), ({"ref": "x"}, False),
    ({"instant": 0}, False), ({"bytes": ""}, False), ({"vector": [1]}, False), ({"json": None}, False),
    ("x", False), ([{"a/b": 1}], False), (None, False),
])
def test_is_entity_map(raw, expected):
    assert is_entity_map(raw) is expected


# ----------------------------------------------------------------- instants

@pytest.mark.parametrize(("text", "us"), [
    ("2026-02-01T00:00:00Z", 1769904000000000), ("2026-08-24T10:00:00Z", 1787565600000000),
    ("2026-01-01T00:00:00Z", 1767225600000000), ("1970-01-01T00:00:00Z", 0),
    ("1969-12-31T23:59:59.999999Z", -1), ("0001-01-01T00:00:00Z", INSTANT_MIN),
    ("9999-12-31T23:59:59.999999Z", INSTANT_MAX), ("9999-12-31T23:59:59.9999999Z", INSTANT_MAX),
    ("2026-01-01T00:00:00.9999999Z", 1767225600999999), ("2026-01-01T00:00:00.5Z", 1767225600500000),
    ("2026-01-01T00:00:00+00:00", 1767225600000000), ("2026-01-01T00:00:00-00:00", 1767225600000000),
    ("2026-01-01T01:00:00+01:00", 1767225600000000), ("2025-12-31T23:00:00-01:00", 1767225600000000),
    ("2026-01-01T23:59:00+23:59", 1767225600000000), ("2024-02-29T12:34:56.5+05:30", 1709190296500000),
    ("0001-01-01T23:59:00+23:59", INSTANT_MIN), ("9999-12-31T00:00:59.999999-23:59", INSTANT_MAX),
])
def test_parse_instant(text, us):
    assert parse_instant(text) == us
    assert from_wire({"instant": text}) == Value(TAG_INSTANT, us)


@pytest.mark.parametrize("bad", [
    "2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01T23:59:60Z",
    "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+23:60", "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z",
    "2026-01-00T00:00:00Z", "2025-02-29T00:00:00Z", "2026-01-01 00:00:00Z", "2026-01-01t00:00:00Z",
    "2026-01-01T00:00:00z", "2026-W01-4T00:00:00Z", "2026-01-01T00:00:00,5Z", "2026-01-01T00:00:00.Z",
    "2026-01-01T00:00:00", "2026-01-01T00:00:00+0100", "2026-01-01T00:00:00+01", "+2026-01-01T00:00:00Z",
    "2026-01-01T00:00Z", "2026-01-01", "2026-01-01T00:00:00Z\n", " 2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00Z ", "２026-01-01T00:00:00Z", "2026-01-01T00:00:00.１Z", "12026-01-01T00:00:00Z",
    "", 1.0, 0.0, True, False, None, [0], {"instant": 0}, INSTANT_MIN - 1, INSTANT_MAX + 1, 2**70, pytest.param(10**5000, id="10**5000"),
])
def test_parse_instant_rejects(bad):
    with pytest.raises(ValueTypeError):
        parse_instant(bad)
    with pytest.raises(ValueTypeError):
        from_wire({"instant": bad})


@pytest.mark.parametrize(("us", "text"), [
    (0, "1970-01-01T00:00:00.000000Z"), (-1, "1969-12-31T23:59:59.999999Z"),
    (INSTANT_MIN, "0001-01-01T00:00:00.000000Z"), (INSTANT_MAX, "9999-12-31T23:59:59.999999Z"),
    (1787565600000000, "2026-08-24T10:00:00.000000Z"), (1709190296500000, "2024-02-29T07:04:56.500000Z"),
])
def test_format_instant(us, text):
    assert format_instant(us) == text
    assert rendered(Value(TAG_INSTANT, us)) == {"instant": text}


@settings(max_examples=300)
@given(st.integers(INSTANT_MIN, INSTANT_MAX))
def test_instant_round_trip(us):
    assert parse_instant(format_instant(us)) == us
    assert parse_instant(us) == us


def test_format_instant_out_of_domain():
    for us in (INSTANT_MIN - 1, INSTANT_MAX + 1):
        with pytest.raises(ValueTypeError):
            format_instant(us)


# ----------------------------------------------------------------- bytes

@pytest.mark.parametrize(("b64", "raw"), [
    ("", b""), ("QQ==", b"A"), ("QUI=", b"AB"), ("QUJD", b"ABC"), ("QR==", b"A"), ("+/+/", b"\xfb\xff\xbf"),
])
def test_bytes_accepted(b64, raw):
    value = from_wire({"bytes": b64})
    assert value == Value(TAG_BYTES, raw)
    assert rendered(value) == {"bytes": base64.b64encode(raw).decode()}


@pytest.mark.parametrize("bad", [
    "QQ", "QQ=", "Q===", "====", "QQ=a", "-_==", "QQ== ", " QQ==", "Q Q==", "QQ=\n=", "QQ==\n", "QQ==QQ==",
    "A", "é", "QUJ\u00c4", 5, None, True, ["QQ=="], bytearray(b"A"),
])
def test_bytes_rejected(bad):
    with pytest.raises(ValueTypeError):
        from_wire({"bytes": bad})


def test_bytes_thresholds():
    for n, tag in ((256, TAG_BYTES), (257, TAG_LONG_BYTES), (MAX_VALUE_BYTES, TAG_LONG_BYTES)):
        raw = bytes(range(256)) * (n // 256) + b"z" * (n % 256)
        value = from_wire({"bytes": base64.b64encode(raw).decode()})
        assert value.t == tag
        assert rendered(value) == {"bytes": base64.b64encode(raw).decode()}
        assert value.logical == "bytes"
    for n in (MAX_VALUE_BYTES + 1, MAX_VALUE_BYTES + 2, 3 * MAX_VALUE_BYTES):
        with pytest.raises(TooLarge):
            from_wire({"bytes": base64.b64encode(b"\0" * n).decode()})
        with pytest.raises(TooLarge):
            from_wire(b"\0" * n)


# ----------------------------------------------------------------- vectors

@pytest.mark.parametrize(("vec", "out"), [
    ([0.1, -0.2], [0.10000000149011612, -0.20000000298023224]), ([1.0, 0.0], [1.0, 0.0]), ([1, 2], [1.0, 2.0]),
    ([3.4028235e38], [3.4028234663852886e38]), ([-3.4028235e38], [-3.4028234663852886e38]), ([1e-50], [0.0]),
    ((0.5,), [0.5]), ([-0.0], [-0.0]), ([2**100], [float(2**100)]),
])
def test_vectors_accepted(vec, out):
    value = from_wire({"vector": vec})
    assert value.t == TAG_VECTOR and value.blob == struct.pack(f"<{len(vec)}f", *vec)
    assert value.v == indirect_key(7, value.blob)
    assert rendered(value) == {"vector": out}
    assert render_vector(value.blob) == out


def test_vector_canonical_rendering():
    assert dumps(rendered(from_wire({"vector": [0.1, -0.2]}))) == '{"vector":[0.10000000149011612,-0.20000000298023224]}'
    assert dumps(rendered(from_wire({"vector": [1.0, 0.0]}))) == '{"vector":[1,0]}'


@pytest.mark.parametrize("bad", [
    [], [3.4028236e38], [1e39], [-1e39], [10**400], [2**128], [math.nan], [1.0, math.inf], [-math.inf],
    ["1"], [True], [1, False], [None], [[1]], [{"a": 1}], "ab", 5, None, {"a": 1}, [1e308, 1e308],
    [math.inf, 10**400], pytest.param([10**5000], id="[10**5000]"),
])
def test_vectors_rejected(bad):
    with pytest.raises(ValueTypeError):
        from_wire({"vector": bad})


def test_vector_element_limit():
    assert len(pack_vector([1] * 262144)) == MAX_VALUE_BYTES
    with pytest.raises(TooLarge):
        from_wire({"vector": [1] * 262145})


# ----------------------------------------------------------------- json

@pytest.mark.parametrize(("raw", "text", "back"), [
    (None, "null", None), ({"z": 1.0, "a": -0.0}, '{"a":0,"z":1}', {"a": 0, "z": 1}),
    ([1, "x", [True]], '[1,"x",[true]]', [1, "x", [True]]), ((1, 2), "[1,2]", [1, 2]),
    ({"n": 1e-7, "m": 0.5}, '{"m":0.5,"n":1e-7}', {"m": 0.5, "n": 1e-7}), ("\x7f\u2028", '"\x7f\u2028"', "\x7f\u2028"),
    ({"z": 1.0, "a": -0.0, "n": 1e-7, "numbers": [1e-7, 1e-6, 1e20, 1e21, 1250.0, -0.0]},
     '{"a":0,"n":1e-7,"numbers":[1e-7,0.000001,1e+20,1e+21,1250,0],"z":1}',
     {"a": 0, "n": 1e-7, "numbers": [1e-7, 1e-6, 1e20, 1e21, 1250, 0], "z": 1}),
])
def test_json_values(raw, text, back):
    value = from_wire({"json": raw})
    assert value == Value(TAG_JSON, text)
    out = rendered(value)
    assert out == {"json": back}
    assert dumps(out) == '{"json":' + text + "}"


def _nest(n, inner):
    for _ in range(n):
        inner = [inner]
    return inner


def test_json_depth_and_size_limits():
    assert from_wire({"json": _nest(64, 1)}).t == TAG_JSON
    assert from_wire({"json": _nest(63, [])}).t == TAG_JSON
    for bad in (_nest(65, 1), _nest(64, []), _nest(64, {}), _nest(64, {"a": 1}), _nest(300, 1.5), _nest(5000, 1)):
        with pytest.raises(TooLarge):
            from_wire({"json": bad})
    big = from_wire({"json": "x" * (MAX_VALUE_BYTES - 2)})
    assert big.t == TAG_JSON and len(big.v) == MAX_VALUE_BYTES  # never indirect
    with pytest.raises(TooLarge):
        from_wire({"json": "x" * (MAX_VALUE_BYTES - 1)})
    with pytest.raises(TooLarge):
        from_wire({"json": ["é" * 1000] * 600})


@pytest.mark.parametrize("bad", [math.nan, [math.inf], {"a": 2**63}, 2**64, {1: 2}, {"a"}, b"x", "\ud800",
                                 {"\udc00": 1}, object()])
def test_json_rejected(bad):
    with pytest.raises(ValueTypeError):
        from_wire({"json": bad})


# ----------------------------------------------------------------- tagged (portable) input

@pytest.mark.parametrize(("raw", "tag", "expected"), [
    (1, "float", Value(TAG_FLOAT, 1.0)), (1.5, "float", Value(TAG_FLOAT, 1.5)),
    (9223372036854774784, "float", Value(TAG_FLOAT, 9.223372036854775e18)),
    (1815, "int", Value(TAG_INT, 1815)), ("1815", "text", Value(TAG_TEXT, "1815")),
    (True, "bool", Value(TAG_BOOL, 1)), ({"instant": 0}, "instant", Value(TAG_INSTANT, 0)),
    ({"instant": "2026-01-01T00:00:00+01:00"}, "instant", Value(TAG_INSTANT, 1767222000000000)),
    ({"bytes": "QQ=="}, "bytes", Value(TAG_BYTES, b"A")), ({"json": None}, "json", Value(TAG_JSON, "null")),
    ({"ref": {"eid": "e"}}, "ref", RefWire({"eid": "e"})), ({"ref": "x"}, "ref", RefWire("x")),
])
def test_from_tagged(raw, tag, expected):
    value = from_tagged(raw, tag)
    assert value == expected
    if isinstance(expected, Value):
        assert type(value.v) is type(expected.v)


def test_from_tagged_long_values():
    assert from_tagged("x" * 300, "text").t == TAG_LONG_TEXT
    assert from_tagged({"vector": [1, 2]}, "vector").t == TAG_VECTOR


@pytest.mark.parametrize(("raw", "tag"), [
    (True, "float"), (math.inf, "float"), (2**63, "float"), (10**400, "float"), ("1", "float"),
    (1.5, "int"), (1.0, "int"), (True, "int"), (2**63, "int"), (1815, "text"), (None, "text"),
    (1, "bool"), (0, "instant"), ("2026-01-01T00:00:00Z", "instant"), ("QQ==", "bytes"), ([1], "vector"),
    (None, "json"), ([1], "json"), ("x", "ref"), ({"missing": True}, "ref"), ({"ref": "x"}, "json"),
    ({"json": 1}, "text_ref"), ({"json": 1}, "JSON"), ({"json": 1, "x": 2}, "json"),
    ({"bytes": "QQ==", "x": 1}, "bytes"), (1, None), (1, ["int"]), ({"json": 1}, "instant"),
    pytest.param(10**5000, "float", id="huge-float"), pytest.param(10**5000, "int", id="huge-int"),
    pytest.param(10**5000, 10**5000, id="huge-tag"),
])
def test_from_tagged_rejects(raw, tag):
    with pytest.raises(ValueTypeError):
        from_tagged(raw, tag)


# ----------------------------------------------------------------- rendering

def test_render_every_tag():
    names = {65: "ada"}
    ref = names.get
    assert render(TAG_REF, 65, None, ref) == {"ref": "ada"}
    assert render(TAG_BOOL, 1, None, ref) is True
    assert render(TAG_BOOL, 0, None, ref) is False
    assert render(TAG_INT, 7, None, ref) == 7
    assert render(TAG_FLOAT, 1.0, None, ref) == 1.0 and dumps(render(TAG_FLOAT, 1e16, None, ref)) == "10000000000000000"
    assert render(TAG_TEXT, "t", None, ref) == "t"
    assert render(TAG_INSTANT, 0, None, ref) == {"instant": "1970-01-01T00:00:00.000000Z"}
    assert render(TAG_BYTES, b"", None, ref) == {"bytes": ""}
    assert render(TAG_LONG_BYTES, b"key", b"\xff" * 300, ref) == {"bytes": base64.b64encode(b"\xff" * 300).decode()}
    assert render(TAG_LONG_TEXT, b"key", "y" * 300, ref) == "y" * 300
    assert render(TAG_VECTOR, b"key", struct.pack("<2f", 1, 0), ref) == {"vector": [1.0, 0.0]}
    assert render(TAG_JSON, '{"a":[1,0.5]}', None, ref) == {"json": {"a": [1, 0.5]}}


@settings(max_examples=200)
@given(st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False),
                 st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300)))
def test_scalar_round_trip(raw):
    value = from_wire(raw)
    out = rendered(value)
    assert out == raw and type(out) is type(raw)
    assert from_wire(out) == value
