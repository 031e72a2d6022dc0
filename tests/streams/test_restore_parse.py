"""Proves streams/restore/parse.py: a line is taken as its record's canonical bytes only when it
is exactly them (checked against ``canonical.loads`` and ``dumps_bytes``, the authorities), it
parses to what ``canonical.loads`` returns, and a restore that leans on it ends exactly as one
that parses and encodes every record the old way."""

from __future__ import annotations

import json
import random

import orjson
import pytest

import fgraph
from fgraph.core.canonical import dumps_bytes, loads
from fgraph.streams.restore import run as restore_module
from fgraph.streams.restore.parse import parse_line
from tests.support.mutations import mutate, random_json
from tests.support.restore_outcome import restore_outcome


def _authority(raw: bytes):
    """What the old path makes of a line: ("error", class) or (record, canonical bytes or None)."""
    try:
        record = loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, fgraph.FgraphError) as exc:
        return ("error", type(exc).__name__)
    try:
        return record, dumps_bytes(record)
    except fgraph.FgraphError:
        return record, None


def _agrees(raw: bytes) -> tuple | None:
    """parse_line's answer, checked against the authority's."""
    parsed = parse_line(raw)
    expected = _authority(raw)
    if parsed is None:
        return None
    record, encoded = parsed
    assert expected[0] != "error", (raw, expected)
    assert record == expected[0] and json.dumps(record) == json.dumps(expected[0]), raw  # same types too
    if encoded is not None:
        assert encoded == raw == expected[1], raw
    return parsed


@pytest.mark.parametrize("raw, taken", [
    (b'{"fact":[{"eid":"u"},"fgraph/at",{"instant":"2026-01-01T00:00:00.000000Z"},"instant","u",null]}', True),
    (b'{"fact":["ada","p/x",0.5,"float","u",null]}', True),
    (b'{"fact":["ada","p/x",1.5e-7,"float","u",null]}', True),
    (b'{"fact":["ada","p/x",{"b":[1,2.25,{"c":null}],"a":true},"json","u",null]}', False),  # keys unsorted
    (b'{"fact":["ada","p/x",{"a":true,"b":[1,2.25,{"c":null}]},"json","u",null]}', True),
    (b'{"fact":["ada","p/x",-9223372036854775808,"int","u",null]}', True),
    (b'{"receipt":{"a":1,"a":2}}', False),                                   # a duplicate key
    (b' {"fact":[]}', False),                                                 # a blank around it
    (b'{"fact":[] }', False),
    (b'{"fact":["\\u00e9"]}', False),                                        # an escape orjson does not write
    (b'{"fact":[1.0E5]}', False),
    (b'{"fact":["a" ,1]}', False),
    (b'{"fact":[NaN]}', False),
    (b'{"fact":[1e+21]}', True),                                             # canonical as well
    (b'{"fact":[-9223372036854775809.0]}', False),                           # orjson: -9.223372036854776e+18
    (b'{"fact":["\xff"]}', False),                                            # not UTF-8
    (b'[' * 81 + b']' * 81, False),                                           # too deep: loads decides
])
def test_a_line_is_taken_only_when_it_is_its_records_canonical_bytes(raw, taken):
    parsed = _agrees(raw)
    assert (parsed is not None and parsed[1] is not None) is taken, parsed


@pytest.mark.parametrize("raw", [
    b'{"fact":[2.0]}',                      # canonical "2"
    b'{"fact":[1e+16]}',                    # canonical "10000000000000000"
    b'{"fact":[{"x":[[1.2345678901234568e+17]]}]}',
    b'{"fact":[{"a":{"b":0.0}}]}',
    b'{"fact":[9223372036854775808]}',      # beyond int64: the canonical encoder refuses it
    b'{"fact":[{"ref":{"x":18446744073709551615}}]}',
])
def test_a_line_orjson_spells_but_the_canonical_form_does_not_is_encoded_again(raw):
    parsed = _agrees(raw)
    assert parsed is not None and parsed[1] is None


def test_deep_documents_within_the_limit_are_taken():
    raw = b'{"fact":' + b'[' * 79 + b']' * 79 + b'}'
    assert _agrees(raw)[1] == raw
    many = b'{"fact":[' + b",".join([b"[]"] * 500) + b']}'   # many brackets, shallow
    assert _agrees(many)[1] == many


def test_random_documents_agree_with_the_authority():
    rng = random.Random(5)
    taken = encoded_again = 0
    for _ in range(3000):
        doc = {"fact": [random_json(rng) for _ in range(rng.randrange(1, 5))]}
        for raw in _spellings(doc):
            parsed = _agrees(raw)
            if parsed is not None:
                taken += parsed[1] is not None
                encoded_again += parsed[1] is None
    assert taken > 500 and encoded_again > 5, (taken, encoded_again)


def _spellings(doc):
    yield json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    yield json.dumps(doc, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8", "surrogatepass")
    try:
        yield orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        yield dumps_bytes(doc)
    except (orjson.JSONEncodeError, fgraph.FgraphError):
        pass


# -- whole restores, with and without it ---------------------------------------------------
def _snapshot() -> str:
    with fgraph.connect(":memory:") as db:
        db.declare("p/knows", ref=True, many=True)
        for i in range(6):
            db.transact({"id": f"e{i}", "p/n": f"v{i}", "p/f": i + 0.25, "p/g": float(i), "p/big": 1e300 * (i - 2),
                         "p/j": {"json": {"b": [i, 0.5], "a": None}}, "p/knows": {"ref": f"e{i // 2}"}})
            db.transact(["retract", f"e{i}", "p/n", f"v{i}"])
        return "".join(line + "\n" for line in db.iter_snapshot())


def _both(tmp_path, monkeypatch, data: bytes, label: str):
    taken = []

    def counted(raw):
        parsed = parse_line(raw)
        taken.append(parsed is not None and parsed[1] is not None)
        return parsed

    monkeypatch.setattr(restore_module, "parse_line", counted)
    fast = restore_outcome(tmp_path / f"{label}-fast.db", data)
    monkeypatch.setattr(restore_module, "parse_line", lambda raw: None)   # always the old path
    old = restore_outcome(tmp_path / f"{label}-old.db", data)
    return fast, old, taken


def test_a_clean_snapshot_restores_alike_and_most_lines_are_taken(tmp_path, monkeypatch):
    text = _snapshot()
    fast, old, taken = _both(tmp_path, monkeypatch, text.encode(), "clean")
    assert fast == old and fast[0] == ("ok",)
    assert sum(taken) >= len(taken) - 12, (sum(taken), len(taken))   # floats like 2.0 and 1e300: encoded again
    with fgraph.connect(str(tmp_path / "clean-fast.db")) as db:
        assert "".join(line + "\n" for line in db.iter_snapshot()) == text


def test_mutated_snapshots_fail_alike_with_and_without_it(tmp_path, monkeypatch):
    text = _snapshot()
    rng = random.Random(23)
    seen = set()
    for n in range(60):
        data = mutate(text, rng, sealed=rng.random() < 0.7)
        fast, old, _ = _both(tmp_path, monkeypatch, data, f"m{n}")
        assert fast == old, (n, fast[0], old[0])
        seen.add(fast[0][1] if fast[0][0] == "error" else "ok")
    assert len(seen) >= 3, seen
