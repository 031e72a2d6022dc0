"""A restore's receipts (fgraph/streams/restore/registry.py): identities created twice are
refused in the store, among the waiting rows and inside one receipt; waiting rows count as
registered and are written together; rows SQLite may refuse are written at once, as a
FormatError; a receipt's payload bytes are cut exactly from the receipt's canonical bytes."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.core.canonical import dumps_bytes
from fgraph.core.catalog import Catalog
from fgraph.core.identity import uuid_to_gid
from fgraph.core.rows import Rows
from fgraph.streams.restore import registry as restore_registry
from fgraph.streams.restore.registry import Registry, RowRefused, receipt_payload_bytes

EVENTS = [f"12345678-1234-4234-8234-{n:012d}" for n in range(1, 6)]


def _registry(db):
    conn = db.connection
    return Registry(conn, Catalog(conn), Rows(conn))


def _event_row(tx: int, operation_id=None):
    return (tx, b"\0" * 32, None, operation_id, None if operation_id is None else b"\1" * 32)


def test_waiting_rows_count_as_registered_and_are_written_together(monkeypatch):
    monkeypatch.setattr(restore_registry, "RECEIPT_BATCH", 2)
    with fgraph.connect(":memory:") as db:
        db.connection.execute("BEGIN")
        registry = _registry(db)
        rows = registry.created(65, ["ada", {"eid": EVENTS[0]}])
        assert rows == [(65, "ada", None), (66, None, uuid_to_gid(EVENTS[0]))]
        registry.register(EVENTS[1], [(i, n, g, 67) for i, n, g in rows] + [(67, None, uuid_to_gid(EVENTS[1]), 67)],
                          _event_row(67), None)
        assert registry.waiting_events and db.connection.execute(
            "SELECT count(*) FROM fgraph_ids WHERE name = 'ada'").fetchone()[0] == 0   # still waiting
        for again in (["ada"], [{"eid": EVENTS[0]}]):
            with pytest.raises(fgraph.Conflict, match="created twice"):
                registry.created(68, again)
        assert registry.event_listed(EVENTS[1]) and not registry.event_listed(EVENTS[2])
        registry.register(EVENTS[2], [(68, None, uuid_to_gid(EVENTS[2]), 68)], _event_row(68), None)
        assert not registry.waiting_events   # the second receipt filled the batch: both written
        assert db.connection.execute("SELECT count(*) FROM fgraph_events WHERE tx IN (67, 68)").fetchone()[0] == 2
        with pytest.raises(fgraph.Conflict, match="created twice"):
            registry.created(69, ["ada"])   # now from the registry itself
        db.connection.execute("ROLLBACK")


def test_a_name_twice_in_one_receipt_is_a_conflict():
    with fgraph.connect(":memory:") as db:
        with pytest.raises(fgraph.Conflict, match="'bob' is created twice"):
            _registry(db).created(65, ["bob", "carol", "bob"])


def test_rows_sqlite_refuses_are_written_at_once_as_a_format_error():
    with fgraph.connect(":memory:") as db:
        db.connection.execute("BEGIN")
        registry = _registry(db)
        registry.register(EVENTS[0], [(65, None, uuid_to_gid(EVENTS[0]), 65)], _event_row(65, "op"), "op")
        assert not registry.waiting_events   # an operation id: written at once
        registry.register(EVENTS[1], [(66, None, uuid_to_gid(EVENTS[1]), 66)], _event_row(66), None)
        with pytest.raises(RowRefused) as refused:
            registry.register(EVENTS[2], [(67, None, uuid_to_gid(EVENTS[2]), 67)], _event_row(67, "op"), "op")
        assert isinstance(refused.value.error, fgraph.FormatError) and "cannot be stored" in str(refused.value.error)
        # the waiting receipt before it was written first, so the refusal is this receipt's own
        assert db.connection.execute("SELECT count(*) FROM fgraph_events WHERE tx = 66").fetchone()[0] == 1
        db.connection.execute("ROLLBACK")


@pytest.mark.parametrize("payload", [
    {"asserted": [["a", "p/x", ',"event_hash":"', "text"]], "at": 1, "created": ['"event_data":'],
     "meta": {"event_hash": "x", "event_data": {"event_hash": ",\"event_hash\":\""}}, "retracted": []},
    {"at": 1, "created": [], "asserted": [], "retracted": [], "by": "é\u2028\"\\"},
    [1, 2.5, None],
])
def test_the_payload_cut_from_the_receipt_is_its_canonical_encoding(payload):
    receipt = {"at": 1, "created": ['x","event_data":"', {"eid": "12345678-1234-4234-8234-123456789012"}],
               "event": "12345678-1234-4234-8234-123456789012", "event_data": payload, "event_hash": "0" * 64,
               "operation_id": ',"event_hash":"', "origin_at": 1, "request_hash": "0" * 64}
    assert receipt_payload_bytes(payload, dumps_bytes({"receipt": receipt})) == dumps_bytes(payload)
    assert receipt_payload_bytes(payload, None) == dumps_bytes(payload)
