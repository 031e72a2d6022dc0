"""Proves every class of bad write input ends in the typed error the spec names and leaves the
database byte-for-byte unchanged (core rows), plus reports, idempotency and sizes."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.clock import stepping_clock
from tests.support.corerows import core_rows_of

def nested(depth: int):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


SETUP = [
    {"id": "user/email", "fgraph/type": "text", "fgraph/unique": True},
    {"id": "p/tags", "fgraph/many": True},
    {"id": "p/friend", "fgraph/type": "ref"},
    {"id": "p/age", "fgraph/type": "int"},
    {"id": "ada", "user/email": "ada@x", "p/age": 36, "p/tags": ["a", "b"]},
    {"id": "bob", "user/email": "bob@x"},
]

BAD = [
    # (data, options, error name)
    ({"id": "x", "bad": 1}, {}, "SchemaError"),
    ({"id": "x", "Bad/Attr": 1}, {}, "SchemaError"),
    ({"id": "x", "noslash": 1}, {}, "SchemaError"),
    ({"id": "x", "fgraph/unknown": 1}, {}, "SchemaError"),
    ({"id": "fgraph/other", "a/b": 1}, {}, "SchemaError"),
    ({"id": "x", "a/b": None}, {}, "TypeError"),
    ({"id": "x", "a/b": 2**63}, {}, "TypeError"),
    ({"id": "x", "a/b": -(2**63) - 1}, {}, "TypeError"),
    ({"id": "x", "a/b": float("inf")}, {}, "TypeError"),
    ({"id": "x", "p/age": "old"}, {}, "TypeError"),
    ({"id": "x", "p/age": 1.5}, {}, "TypeError"),
    ({"id": "x", "a/b": {"instant": "2026-01-01 00:00:00Z"}}, {}, "TypeError"),
    ({"id": "x", "a/b": {"bytes": "AAE"}}, {}, "TypeError"),
    ({"id": "x", "a/b": {"vector": []}}, {}, "TypeError"),
    ({"id": "x", "a/b": {"nested": 1}}, {}, "TypeError"),
    ({"id": "x", "a/b": "x" * (1048576 + 1)}, {}, "TooLarge"),
    ({"id": "x", "a/b": {"json": nested(65)}}, {}, "TooLarge"),
    ({"id": 999, "a/b": 1}, {}, "NotFound"),
    ({"id": 2**63, "a/b": 1}, {}, "TypeError"),
    ({"id": True, "a/b": 1}, {}, "TypeError"),
    ({"id": "x", "p/friend": {"ref": 999}}, {}, "NotFound"),
    ({"id": "x", "p/friend": {"ref": ["p/age", 36]}}, {}, "SchemaError"),
    ({"id": "x", "p/friend": {"ref": ["user/email", "nobody@x"]}}, {}, "NotFound"),
    ({"id": {"tmp": ""}, "a/b": 1}, {}, "TypeError"),
    ({"id": {"eid": "4fdae471-2e64-57b7-bc98-bcc828aa539c"}, "a/b": 1}, {}, "TypeError"),
    ({"id": 1, "a/b": 1}, {}, "Unsupported"),
    ({"id": 64, "a/b": 1}, {}, "Unsupported"),
    ({"id": "ada", "user/email": "bob@x"}, {}, "Conflict"),
    ({"id": "ada", "p/age": [1, 2]}, {}, "Conflict"),
    ([{"id": "ada", "p/age": 1}, {"id": "ada", "p/age": 2}], {}, "Conflict"),
    ([{"id": "c1", "user/email": "z@x"}, {"id": "c2", "user/email": "z@x"}], {}, "Conflict"),
    (["cas", "ada", "p/age", 35, 37], {}, "Conflict"),
    # a failed cas is reported after the other items are planned: a later wrong type wins (published)
    ([["cas", "ada", "p/age", 35, 37], {"id": "x", "p/age": 1.5}], {}, "TypeError"),
    (["cas", "ada", "p/tags", "a", "c"], {}, "SchemaError"),
    (["cas", "nobody", "p/age", 1, 2], {}, "NotFound"),
    (["assert", "ada", "p/age"], {}, "TypeError"),
    (["retract"], {}, "TypeError"),
    (["frob", "x"], {}, "TypeError"),
    ([["frob", "x"]], {}, "TypeError"),
    ([[{"id": "x"}]], {}, "TypeError"),
    ("just text", {}, "TypeError"),
    (42, {}, "TypeError"),
    ({"id": "x", "a/b": 1}, {"if_basis_tx": 65}, "Conflict"),
    ({"id": "x", "a/b": 1}, {"if_basis_tx": 63}, "TypeError"),
    ({"id": "x", "a/b": 1}, {"if_basis_tx": "70"}, "TypeError"),
    ({"id": "x", "a/b": 1}, {"operation_id": ""}, "TypeError"),
    ({"id": "x", "a/b": 1}, {"operation_id": "a\u0080"}, "TypeError"),
    ({"id": "x", "a/b": 1}, {"operation_id": "x" * 513}, "TypeError"),
    ({"id": "x", "a/b": 1}, {"tx": {"fgraph/at": 1}}, "SchemaError"),
    ({"id": "x", "a/b": 1}, {"tx": {"id": "y"}}, "SchemaError"),
    ({"id": "x", "a/b": 1}, {"by": 5}, "TypeError"),
    ({"id": "x", "fgraph/type": "decimal"}, {}, "SchemaError"),
    ({"id": "q/v", "fgraph/dims": 3}, {}, "SchemaError"),
    ({"id": "q/v", "fgraph/type": "json", "fgraph/unique": True}, {}, "SchemaError"),
    ({"id": "p/age", "fgraph/type": "text"}, {}, "SchemaError"),
]


@pytest.fixture
def db():
    database = fgraph.connect(":memory:", clock=stepping_clock())
    for data in SETUP:
        database.transact(data)
    yield database
    database.close()


@pytest.mark.parametrize("data, options, error", BAD, ids=[f"{i}-{e}" for i, (_, _, e) in enumerate(BAD)])
def test_bad_input_is_typed_and_changes_nothing(db, data, options, error):
    before = core_rows_of(db.connection)
    with pytest.raises(fgraph.FgraphError) as caught:
        db.transact(data, **options)
    assert caught.value.name == error, str(caught.value)
    assert str(caught.value)  # every message says something
    assert core_rows_of(db.connection) == before
    # the clock was not consumed: the next commit is exactly one second later
    latest = db.receipt(db.latest_tx())["at"]
    assert db.transact({"id": "probe", "probe/v": 1})["at"] == latest + 1_000_000


def test_event_size_cap(db):
    big = {"id": "big", **{f"b/v{i}": "y" * 1048576 for i in range(9)}}
    before = core_rows_of(db.connection)
    with pytest.raises(fgraph.TooLarge):
        db.transact(big)
    assert core_rows_of(db.connection) == before


def test_operation_id_idempotency(db):
    first = db.transact({"id": "c", "c/v": 1}, operation_id="op-1")
    again = db.transact({"id": "c", "c/v": 1.0}, operation_id="op-1", if_basis_tx=64)
    assert again["status"] == "already_applied"
    assert (again["tx"], again["at"], again["event"], again["basis_tx"]) == \
        (first["tx"], first["at"], first["event"], first["basis_tx"])
    with pytest.raises(fgraph.Conflict):
        db.transact({"id": "c", "c/v": 2}, operation_id="op-1")
    # an operation id always commits, even when the facts are live already
    assert db.transact({"id": "c", "c/v": 1}, operation_id="op-2")["status"] == "applied"


def test_noop_consumes_nothing(db):
    latest = db.latest_tx()
    report = db.transact({"id": {"tmp": "unused"}})
    assert report == {"asserted": [], "at": None, "basis_tx": latest, "event": None, "ids": {}, "retracted": [],
                      "status": "noop", "tx": None}
    assert db.transact({"id": "ada", "p/age": 36})["status"] == "noop"
    assert db.transact({"id": "brand-new"})["status"] == "applied"
    assert db.transact({}, by="")["status"] == "applied"


# -- caches kept across commits (writer head, attribute schemas) ----------------------------------

def seeded_events(tx_id: int) -> str:
    from fgraph.core.identity import seeded_event_uuid
    return seeded_event_uuid("cache-test", tx_id)


def foreign_events(path) -> list[str]:
    source = fgraph.connect(str(path) + ".source.db", clock=stepping_clock(), event_factory=seeded_events)
    source.transact({"id": "zed", "z/v": 1})
    source.transact({"id": "zed", "z/v": 2})
    lines = list(source.iter_events(64))
    source.close()
    return lines


def cache_scenario(path, *, reopen_between_steps: bool) -> str:
    """A history that moves the head and the schema behind a long-lived connection's back."""
    clock = stepping_clock()
    other = fgraph.connect(path, clock=clock, event_factory=seeded_events)
    stream = []
    writer = [fgraph.connect(path, clock=clock, event_factory=seeded_events)]

    def step(action):
        if reopen_between_steps:  # a fresh connection knows nothing from earlier commits
            writer[0].close()
            writer[0] = fgraph.connect(path, clock=clock, event_factory=seeded_events)
        action(writer[0])

    step(lambda db: db.transact({"id": "p/tags", "fgraph/many": False}))
    step(lambda db: db.transact({"id": "ada", "p/name": "Ada", "p/tags": "a", "p/age": 36}))
    step(lambda db: db.transact({"id": "ada", "p/name": "Ada L", "p/age": 37}))           # card-one replacement
    step(lambda db: other.transact({"id": "p/tags", "fgraph/many": True}))                # schema moves elsewhere
    step(lambda db: db.transact({"id": "ada", "p/tags": ["b", "c"]}))                     # needs the new schema
    step(lambda db: other.transact({"id": "bob", "p/name": "Bob"}))                       # head moves elsewhere
    step(lambda db: db.transact({"id": "bob", "p/age": 5, "p/friend": {"ref": "ada"}}))
    step(lambda db: db.transact([{"id": "p/email", "fgraph/type": "text", "fgraph/unique": True},
                                 {"id": "cy", "p/email": "c@x"}]))
    step(lambda db: db.transact({"p/email": "c@x", "p/age": 9}))                          # upsert via new unique
    step(lambda db: pytest.raises(fgraph.Conflict, db.transact, {"id": "dee", "p/email": "c@x"}))
    step(lambda db: db.transact({"id": "p/age", "fgraph/type": "int"}))
    step(lambda db: pytest.raises(fgraph.ValueTypeError, db.transact, {"id": "ada", "p/age": "old"}))
    step(lambda db: stream.extend(db.iter_events(64)))
    step(lambda db: db.undo(db.latest_tx()))
    step(lambda db: db.transact({"id": "ada", "p/age": 40}))
    step(lambda db: db.connection.execute(                                                 # a raw write, rolled back
        "BEGIN; UPDATE fgraph_meta SET value = value + 5 WHERE key = 'next_id'; ROLLBACK"))
    step(lambda db: db.transact({"id": "eve", "p/name": "Eve"}))
    step(lambda db: db.apply([line + "\n" for line in foreign_events(path)]))           # writes on this connection
    step(lambda db: db.transact({"id": "eve", "p/age": 30}))
    step(lambda db: db.excise("bob"))
    step(lambda db: db.transact({"id": "ada", "p/name": "Ada K"}))
    step(lambda db: other.transact(["retract", "ada", "p/tags", "b"]))
    step(lambda db: db.transact({"id": "ada", "p/tags": "d"}))
    db = writer[0]
    rows = core_rows_of(db.connection)
    assert db.doctor()["ok"], db.doctor()
    db.close()
    other.close()
    return rows


def test_cached_commits_write_what_fresh_reads_write(tmp_path):
    cached = cache_scenario(tmp_path / "cached.db", reopen_between_steps=False)
    fresh = cache_scenario(tmp_path / "fresh.db", reopen_between_steps=True)
    assert cached == fresh


def reads_during(db, action) -> list[str]:
    seen = []
    db.connection.exec_trace = lambda cursor, sql, bindings: seen.append(sql) or True
    try:
        action()
    finally:
        db.connection.exec_trace = None
    return seen


def test_head_is_reused_until_someone_else_writes(tmp_path):
    path = tmp_path / "h.db"
    db, other = fgraph.connect(path, clock=stepping_clock()), fgraph.connect(path)
    db.transact({"id": "a", "a/v": 1})
    quiet = reads_during(db, lambda: db.transact({"id": "a", "a/v": 2}))
    assert not any("max(tx)" in sql or "next_id'" in sql and sql.startswith("SELECT") for sql in quiet)
    tx = other.transact({"id": "b", "a/v": 3})["tx"]
    after = reads_during(db, lambda: db.transact({"id": "a", "a/v": 4}))
    assert any("max(tx)" in sql for sql in after)
    assert db.latest_tx() == tx + 1
    db.close()
    other.close()


def test_cas_expecting_a_ref_to_an_unknown_entity_is_not_found(db):
    # found by the bulk-vs-event property test: it crashed with an internal error; the published
    # runtime answers NotFound whether or not the attribute has a live value
    db.transact([{"id": "ada", "p/age": 0}, {"id": "p/friend", "fgraph/type": "ref"}])
    for attr in ("p/friend", "p/age"):
        with pytest.raises(fgraph.NotFound, match="'nobody'"):
            db.transact([["cas", "ada", attr, {"ref": "nobody"}, {"ref": "ada"}]])
