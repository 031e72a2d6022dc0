"""Proves clock and identity derivation (spec 03 §7–§8): seeded event UUIDs, anonymous eids,
the monotonic transaction time and the FGRAPH_CLOCK / FGRAPH_EVENT_SEED overrides."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.core import identity
from tests.support.constants import CONFORMANCE_CLOCK


@pytest.mark.parametrize("tx, expected", [
    (65, "f4ffaa94-9587-4521-9b9f-8915cc70ae3b"),
    (66, "36645192-43ad-4d65-b540-188299d1bde4"),
    (67, "01eb0e5e-0d81-4a0a-9747-d7a8570bc521"),
    (68, "8c5bd882-4cb0-4901-9af6-4027c1a588fb"),
])
def test_seeded_event_uuids(tx, expected):
    assert identity.seeded_event_uuid("fgraph-conformance-v2", tx) == expected


def test_anonymous_eid_matches_spec_example():
    gid = identity.anonymous_eid("b2d58e48-fb5c-409d-ae37-3f74d80193b9", 0)
    assert identity.gid_to_uuid(gid) == "4fdae471-2e64-57b7-bc98-bcc828aa539c"


@pytest.mark.parametrize("clock, latest, expected", [
    (1767225600000000, None, 1767225600000000),
    (1767225500000000, 1767225600000000, 1767225601000000),
    (1767225600000000, 1767225600000000, 1767225601000000),
    (1767225700000000, 1767225600000000, 1767225700000000),
])
def test_monotonic_time(clock, latest, expected):
    assert identity.transaction_time(clock, latest) == expected


@pytest.mark.parametrize("raw", ["abc", "1.5", "", "1e6", "253402300800000000", "-62135596800000001"])
def test_bad_clock_env_is_type_error(monkeypatch, raw):
    monkeypatch.setenv("FGRAPH_CLOCK", raw)
    with pytest.raises(fgraph.ValueTypeError):
        identity.clock_from_env()


def test_constant_clock_steps_one_second_per_commit(monkeypatch, tmp_path):
    monkeypatch.setenv("FGRAPH_CLOCK", "1767225600000000")
    db = fgraph.connect(str(tmp_path / "a.db"))
    try:
        ats = [db.transact({"id": f"e{i}", "k/v": i})["at"] for i in range(3)]
        assert ats == [1767225601000000, 1767225602000000, 1767225603000000]
        assert db.transact({"id": "e0", "k/v": 0})["at"] is None  # a no-op reads no clock
        assert db.transact({"id": "e9", "k/v": 9})["at"] == 1767225604000000
    finally:
        db.close()


def test_backwards_clock_stays_monotonic():
    readings = iter([1767225600000000, 1767225500000000, 1767225400000000])
    db = fgraph.connect(":memory:", clock=lambda: next(readings))
    try:
        assert db.transact({"id": "a", "k/v": 1})["at"] == 1767225601000000
        assert db.transact({"id": "a", "k/v": 2})["at"] == 1767225602000000
    finally:
        db.close()


def test_random_uuids_without_seed(monkeypatch):
    monkeypatch.delenv("FGRAPH_EVENT_SEED", raising=False)
    db = fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK)
    try:
        events = {db.transact({"id": f"n{i}", "k/v": i})["event"] for i in range(5)}
    finally:
        db.close()
    assert len(events) == 5
    for event in events:
        identity.check_event_uuid(event)


@pytest.mark.parametrize("bad", ["F4FFAA94-9587-4521-9B9F-8915CC70AE3B", "f4ffaa94-9587-0521-9b9f-8915cc70ae3b",
                                 "f4ffaa94-9587-6521-9b9f-8915cc70ae3b", "f4ffaa94-9587-4521-cb9f-8915cc70ae3b",
                                 "f4ffaa9495874521 9b9f8915cc70ae3b", 5])
def test_bad_uuid_rejected(bad):
    with pytest.raises(fgraph.ValueTypeError):
        identity.check_event_uuid(bad)


@pytest.mark.parametrize("gid", [None, b"", b"\x00" * 15, b"\x00" * 17, "not bytes"])
def test_a_missing_or_damaged_gid_is_a_damaged_file_not_an_internal_error(gid):
    from fgraph.core.errors import FormatError
    from fgraph.core.identity import gid_to_uuid
    with pytest.raises(FormatError, match="no stored UUID in the identity registry: the file is damaged"):
        gid_to_uuid(gid)
    assert gid_to_uuid(bytearray(16)) == gid_to_uuid(bytes(16)) == "00000000-0000-0000-0000-000000000000"
