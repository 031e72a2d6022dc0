"""Proves the library façade (spec 11 §3, 09 §5): connect() checks its arguments, Db closes, read-only
handles and historical views refuse every write, a view never sees past its basis, and the thin
wrappers (add, retract, declare, events, snapshot, stats) do what their names say."""

from __future__ import annotations

import inspect
import io
import os

import apsw
import pytest

import fgraph
from fgraph.core.canonical import loads
from fgraph.core.identity import seeded_event_uuid
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.clock import stepping_clock
from tests.support.corerows import core_rows, core_rows_of

ANY = object()  # a default the spec leaves to the runtime (an "unset" sentinel)
POS, KW = "positional", "keyword"
TRANSACT = [("data", POS, inspect.Parameter.empty), ("source", KW, None), ("by", KW, None), ("meta", KW, ANY),
            ("tx", KW, None), ("operation_id", KW, None), ("if_basis_tx", KW, None)]
SPEC_SURFACE = {  # spec 11 §3: parameter, how it is passed, default
    "transact": TRANSACT,
    "add": TRANSACT,
    "retract": [("ref", POS, inspect.Parameter.empty), ("attr", POS, None), ("value", POS, None)],
    "declare": [("attr", POS, inspect.Parameter.empty), ("type", KW, None), ("ref", KW, False), ("many", KW, None),
                ("unique", KW, None), ("nohistory", KW, None), ("dims", KW, None), ("doc", KW, None),
                ("vector_model", KW, None), ("operation_id", KW, None), ("if_basis_tx", KW, None)],
    "undo": [("transaction", POS, inspect.Parameter.empty), ("by", KW, None), ("operation_id", KW, None),
             ("if_basis_tx", KW, None)],
    "excise": [("ref", POS, inspect.Parameter.empty), ("operation_id", KW, None), ("if_basis_tx", KW, None)],
    "receipt": [("transaction", POS, inspect.Parameter.empty)],
    "stats": [],
    "entity": [("ref", POS, inspect.Parameter.empty), ("depth", POS, 1)],
    "history": [("ref", POS, inspect.Parameter.empty), ("attr", POS, None)],
    "why": [("ref", POS, inspect.Parameter.empty), ("attr", POS, None)],
    "diff": [("t1", POS, inspect.Parameter.empty), ("t2", POS, inspect.Parameter.empty)],
    "changes": [("since", POS, inspect.Parameter.empty), ("until", POS, None)],
    "at": [("value", POS, inspect.Parameter.empty)],
    "event_records": [("since", POS, 64), ("through", POS, None)],
    "follow": [("since", POS, None), ("interval", KW, 0.5)],
    "apply": [("source", POS, inspect.Parameter.empty)],
    "apply_summary": [("source", POS, inspect.Parameter.empty)],
    "snapshot": [("writer", POS, None)],
    "iter_snapshot": [],
    "restore": [("source", POS, inspect.Parameter.empty)],
    "backup": [("path", POS, inspect.Parameter.empty)],
    "doctor": [("repair", KW, False)],
    "close": [],
}
FUNCTIONS = {
    "connect": [("path", POS, "fgraph.db"), ("clock", KW, None), ("read_only", KW, False),
                ("query_budget", KW, 100000), ("event_factory", KW, None)],
    "restore_backup": [("snapshot", POS, inspect.Parameter.empty), ("path", POS, inspect.Parameter.empty),
                       ("clock", KW, None), ("event_factory", KW, None)],
}


def check_signature(func, spec) -> None:
    params = list(inspect.signature(func).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    spec_positional = [s for s in spec if s[1] == POS]
    # positional parameters: same count (at least), same names (keyword calls work too), same defaults
    assert len(positional) >= len(spec_positional), func
    for ours, (name, _, default) in zip(positional, spec_positional):
        assert ours.name == name, (func, ours.name, name)
        if default is not ANY:
            assert ours.default == default, (func, name)
    for name, how, default in spec:
        if how == KW:
            assert name in by_name, (func, name)
            if default is not ANY:
                assert by_name[name].default == default, (func, name)
    # nothing beyond the spec is required
    extra = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert len(extra) == sum(1 for s in spec if s[2] is inspect.Parameter.empty), func


@pytest.mark.parametrize("method", sorted(SPEC_SURFACE))
def test_db_offers_the_published_method(method):
    assert callable(getattr(fgraph.Db, method, None)), method
    check_signature(getattr(fgraph.Db, method), SPEC_SURFACE[method])


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_module_offers_the_published_function(function):
    check_signature(getattr(fgraph, function), FUNCTIONS[function])


def test_add_is_transact():
    assert fgraph.Db.add is fgraph.Db.transact


# -- connect -------------------------------------------------------------------------------------

@pytest.mark.parametrize("budget", [0, -1, True, False, 1.5, "100", None, 10**20 * 0.5])
def test_invalid_query_budget_is_type_error_and_creates_nothing(tmp_path, budget):
    path = tmp_path / "q.db"
    with pytest.raises(fgraph.ValueTypeError) as caught:
        fgraph.connect(str(path), query_budget=budget)
    assert caught.value.name == "TypeError"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("budget", [1, 100000, 2**63 - 1])
def test_valid_query_budget_opens(tmp_path, budget):
    with fgraph.connect(str(tmp_path / "q.db"), query_budget=budget, clock=stepping_clock()) as db:
        assert db.latest_tx() == 64


@pytest.mark.parametrize("clock", ["now", 1.5, True, [1]])
def test_invalid_clock_is_type_error_and_creates_nothing(tmp_path, clock):
    with pytest.raises(fgraph.ValueTypeError):
        fgraph.connect(str(tmp_path / "c.db"), clock=clock)
    assert os.listdir(tmp_path) == []


def test_constant_clock_and_monotonic_transaction_time():
    with fgraph.connect(":memory:", clock=CONFORMANCE_CLOCK) as db:
        assert db.receipt(64)["at"] == CONFORMANCE_CLOCK
        assert db.transact({"id": "a", "a/v": 1})["at"] == CONFORMANCE_CLOCK + 1_000_000
        assert db.transact({"id": "a", "a/v": 2})["at"] == CONFORMANCE_CLOCK + 2_000_000


def test_default_path_is_fgraph_db_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with fgraph.connect(clock=stepping_clock()) as db:
        assert db.path == "fgraph.db"
        assert db.read_only is False and db.basis is None
    assert (tmp_path / "fgraph.db").is_file()


def test_event_factory_names_every_event():
    with fgraph.connect(":memory:", clock=stepping_clock(),
                        event_factory=lambda tx: seeded_event_uuid("db-test", tx)) as db:
        report = db.transact({"id": "a", "a/v": 1})
        assert report["event"] == seeded_event_uuid("db-test", report["tx"])
        assert db.receipt(report["tx"])["event"] == report["event"]


# -- lifecycle -----------------------------------------------------------------------------------

def test_context_manager_returns_the_db_and_closes_it(tmp_path):
    with fgraph.connect(str(tmp_path / "a.db"), clock=stepping_clock()) as db:
        conn = db.connection
        assert isinstance(db, fgraph.Db)
        db.transact({"id": "a", "a/v": 1})
    assert db.connection is None
    with pytest.raises(apsw.ConnectionClosedError):
        conn.execute("SELECT 1")
    db.close()  # closing twice is harmless


def test_context_manager_closes_on_error_and_lets_it_through(tmp_path):
    with pytest.raises(fgraph.NotFound), fgraph.connect(str(tmp_path / "a.db"), clock=stepping_clock()) as db:
        conn = db.connection
        db.entity("nobody")
    assert db.connection is None
    with pytest.raises(apsw.ConnectionClosedError):
        conn.execute("SELECT 1")


def test_closing_a_view_leaves_the_database_open():
    with fgraph.connect(":memory:", clock=stepping_clock()) as db:
        tx = db.transact({"id": "a", "a/v": 1})["tx"]
        with db.at(tx) as view:
            assert view.entity("a") == {"a/v": 1}
        assert view.connection is None
        assert db.transact({"id": "a", "a/v": 2})["tx"] > tx
        assert db.entity("a") == {"a/v": 2}


# -- read-only handles and views refuse writes ---------------------------------------------------

WRITES = {
    "transact": lambda d: d.transact({"id": "x", "a/b": 1}),
    "add": lambda d: d.add({"id": "x", "a/b": 1}),
    "retract": lambda d: d.retract("ada"),
    "retract-attr": lambda d: d.retract("ada", "p/age"),
    "declare": lambda d: d.declare("p/age", type="int"),
    "undo": lambda d: d.undo(d.latest_tx()),
    "excise": lambda d: d.excise("ada"),
    "apply": lambda d: d.apply([]),
    "apply_summary": lambda d: d.apply_summary([], dry_run=True),
    "restore": lambda d: d.restore(""),
    "doctor-repair": lambda d: d.doctor(repair=True),
}


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "s.db")
    with fgraph.connect(path, clock=stepping_clock()) as db:
        db.transact({"id": "ada", "p/age": 36, "p/name": "Ada"})
        db.transact({"id": "ada", "p/age": 37})
    return path


@pytest.mark.parametrize("write", sorted(WRITES))
def test_read_only_db_refuses_every_write(store, write):
    before = core_rows(store)
    with fgraph.connect(store, read_only=True) as db:
        assert db.read_only is True
        with pytest.raises(fgraph.ReadOnly) as caught:
            WRITES[write](db)
        assert "read-only" in caught.value.message and caught.value.hint
        assert db.entity("ada") == {"p/age": 37, "p/name": "Ada"}
    assert core_rows(store) == before


@pytest.mark.parametrize("write", sorted(WRITES))
def test_historical_view_refuses_every_write(store, write):
    before = core_rows(store)
    with fgraph.connect(store, clock=stepping_clock()) as db:
        first = db.history("ada")[0]["tx"]
        view = db.at(first)
        assert view.read_only is True and view.basis == first
        with pytest.raises(fgraph.ReadOnly) as caught:
            WRITES[write](view)
        assert f"historical view at transaction {first}" in caught.value.message
        assert core_rows_of(db.connection) == before
        assert db.transact({"id": "ada", "p/age": 38})["status"] == "applied"  # the database itself writes


def test_read_only_reads_equal_writable_reads(store):
    with fgraph.connect(store) as rw, fgraph.connect(store, read_only=True) as ro:
        assert ro.stats() == rw.stats()
        assert ro.history("ada") == rw.history("ada")
        assert ro.event_records() == rw.event_records()
        assert ro.snapshot() == rw.snapshot()
        first = rw.history("ada")[0]["tx"]
        assert ro.at(first).entity("ada") == rw.at(first).entity("ada") == {"p/age": 36, "p/name": "Ada"}


# -- views never see past their basis ------------------------------------------------------------

@pytest.fixture
def timeline():
    """A store and what it looked like after each transaction: {tx: (entity, stats, snapshot, events)}."""
    db = fgraph.connect(":memory:", clock=stepping_clock())
    seen = {}
    for data in ({"id": "ada", "p/age": 36}, {"id": "ada", "p/age": 37}, {"id": "bob", "p/age": 5},
                 ["retract", "ada", "p/age"], {"id": "ada", "p/age": 40, "p/tags": "x"}):
        tx = db.transact(data)["tx"]
        seen[tx] = (db.entity("ada"), db.stats(), db.snapshot(), db.event_records(), db.logical_digest())
    yield db, seen
    db.close()


def test_views_show_the_store_as_it_was(timeline):
    db, seen = timeline
    for tx, (entity, stats, snapshot, events, digest) in seen.items():
        view = db.at(tx)
        assert view.basis == tx and view.latest_tx() == tx
        assert view.entity("ada") == entity
        assert view.stats() == stats
        assert view.snapshot() == snapshot
        assert view.logical_digest() == digest
        assert view.event_records() == events
        assert view.event_records(64, 10_000) == events
        assert list(view.iter_events()) == [line for line in db.iter_events(64, tx)]


def test_iter_tx_events_pairs_each_line_with_its_transaction(timeline):
    db, seen = timeline
    pairs = list(db.iter_tx_events())
    assert [tx for tx, _ in pairs] == sorted(seen)
    assert [line for _, line in pairs] == list(db.iter_events())
    for tx, line in pairs:
        assert list(db.iter_events(tx - 1, tx)) == [line]
    second = sorted(seen)[1]
    assert list(db.at(second).iter_tx_events()) == pairs[:2]
    assert list(db.iter_tx_events(second)) == pairs[2:]

def test_a_view_hides_later_entities_transactions_and_retractions(timeline):
    db, seen = timeline
    first, second, third, fourth, _ = sorted(seen)
    view = db.at(second)
    with pytest.raises(fgraph.NotFound):
        view.entity("bob")
    with pytest.raises(fgraph.NotFound):
        view.receipt(third)
    assert view.receipt(second)["read_basis_tx"] == second
    history = view.history("ada", "p/age")
    assert [(h["v"], h["tx"], h["rx"]) for h in history] == [(36, first, second), (37, second, None)]
    assert "rx_at" not in history[1]  # retracted at `fourth`, which this view cannot see
    assert db.history("ada", "p/age")[1]["rx"] == fourth
    changes = view.changes(64)
    assert changes == view.diff(64, second) == view.diff(64, fourth)
    assert [(f["v"], f["rx"]) for f in changes["asserted"] if f["a"] == "p/age"] == [(36, second), (37, None)]
    assert [(f["v"], f["rx"]) for f in db.diff(64, second)["asserted"] if f["a"] == "p/age"] == \
        [(36, second), (37, fourth)]
    assert view.diff(third, fourth) == {"asserted": [], "retracted": []}


def test_nested_views_are_clamped_to_the_outer_basis(timeline):
    db, seen = timeline
    first, second, third, _, last = sorted(seen)
    view = db.at(second)
    assert view.at(last).basis == second
    assert view.at("2099-01-01T00:00:00Z").basis == second
    assert view.at(first).basis == first
    inner = view.at(third).at(first)
    assert inner.basis == first and inner.entity("ada") == seen[first][0]
    assert db.at(last).at(third).basis == third


def test_at_resolves_ids_instants_and_rfc3339(timeline):
    db, seen = timeline
    first, second, *_ = sorted(seen)
    assert db.at(first).basis == first
    assert db.at(str(second)).basis == second
    assert db.at(CONFORMANCE_CLOCK).basis == 64                        # genesis time
    assert db.at(CONFORMANCE_CLOCK + 1_500_000).basis == first         # between the first and second commit
    assert db.at("2026-01-01T00:00:02Z").basis == second
    assert db.at("2026-01-01T00:00:02.999999Z").basis == second


@pytest.mark.parametrize("value, error", [
    (65, "NotFound"),                                  # an entity id, read as an instant before genesis
    (CONFORMANCE_CLOCK - 1, "NotFound"),
    ("00000000-0000-4000-8000-000000000099", "NotFound"),  # no event of this store
    (9223372036854775807, "TypeError"),
    (-9223372036854775808, "TypeError"),
    (2**63, "TypeError"),
    (True, "TypeError"),
    (1.5, "TypeError"),
    (None, "TypeError"),
    ("yesterday", "TypeError"),
])
def test_at_rejects_what_is_not_a_time(timeline, value, error):
    db, _ = timeline
    with pytest.raises(fgraph.FgraphError) as caught:
        db.at(value)
    assert caught.value.name == error


def test_follow_on_a_view_is_unsupported(timeline):
    db, seen = timeline
    view = db.at(min(seen))
    with pytest.raises(fgraph.Unsupported):
        next(view.follow())
    with pytest.raises(fgraph.Unsupported):
        next(view.follow_lines())


# -- write wrappers ------------------------------------------------------------------------------

@pytest.fixture
def db():
    database = fgraph.connect(":memory:", clock=stepping_clock())
    database.declare("p/tags", many=True)
    database.transact({"id": "ada", "p/age": 36, "p/name": "Ada", "p/tags": ["a", "b"]})
    yield database
    database.close()


def test_add_and_transact_write_the_same_report():
    reports = []
    for method in ("transact", "add"):
        with fgraph.connect(":memory:", clock=stepping_clock(),
                            event_factory=lambda tx: seeded_event_uuid("same", tx)) as db:
            reports.append(getattr(db, method)({"id": "a", "a/v": 1}, by="me", source="s", meta={"k": 1},
                                               tx={"audit/tag": "t"}))
    assert reports[0] == reports[1]


def test_retract_entity_attribute_and_value(db):
    db.transact({"id": "ada", "p/tags": "c"})
    assert db.entity("ada") == {"p/age": 36, "p/name": "Ada", "p/tags": ["a", "b", "c"]}
    report = db.retract("ada", "p/tags", "b")
    assert [(f["a"], f["v"], f["rx"]) for f in report["retracted"]] == [("p/tags", "b", report["tx"])]
    assert db.entity("ada")["p/tags"] == ["a", "c"]
    report = db.retract("ada", "p/tags")
    assert [f["v"] for f in report["retracted"]] == ["a", "c"]
    assert db.entity("ada") == {"p/age": 36, "p/name": "Ada"}
    report = db.retract("ada")
    assert [(f["a"], f["v"]) for f in report["retracted"]] == [("p/age", 36), ("p/name", "Ada")]
    assert db.entity("ada") == {}
    assert db.retract("ada")["status"] == "noop"
    assert db.event_records()[-1]["retracted"] == [["ada", "p/age", 36, "int"], ["ada", "p/name", "Ada", "text"]]


def test_retract_passes_idempotency_and_basis(db):
    latest = db.latest_tx()
    with pytest.raises(fgraph.Conflict):
        db.retract("ada", "p/age", if_basis_tx=latest - 1)
    first = db.retract("ada", "p/age", operation_id="r1", if_basis_tx=latest)
    again = db.retract("ada", "p/age", operation_id="r1")
    assert again["status"] == "already_applied" and again["tx"] == first["tx"]
    assert db.receipt(first["tx"])["operation_id"] == "r1"


@pytest.mark.parametrize("attr, options, expected", [
    ("q/age", {"type": "int"}, {"fgraph/type": "int"}),
    ("q/friend", {"ref": True}, {"fgraph/type": "ref"}),
    ("q/friend", {"ref": True, "type": "ref"}, {"fgraph/type": "ref"}),
    ("q/tags", {"many": True, "doc": "free tags"}, {"fgraph/doc": "free tags", "fgraph/many": True}),
    ("q/email", {"type": "text", "unique": True, "nohistory": False},
     {"fgraph/nohistory": False, "fgraph/type": "text", "fgraph/unique": True}),
    ("q/emb", {"type": "vector", "dims": 2, "vector_model": "m-1"},
     {"fgraph/dims": 2, "fgraph/type": "vector", "fgraph/vector-model": "m-1"}),
])
def test_declare_writes_the_declaration(db, attr, options, expected):
    report = db.declare(attr, **options)
    assert report["status"] == "applied"
    assert db.entity(attr) == expected


@pytest.mark.parametrize("attr, options", [
    ("q/x", {}),
    ("q/x", {"type": "decimal"}),
    ("q/x", {"ref": True, "type": "text"}),
    ("plain", {"type": "int"}),
    ("fgraph/x", {"type": "int"}),
    ("p/age", {"type": "text"}),       # breaks the live value 36
    ("q/x", {"dims": 3}),              # dims without vector
])
def test_bad_declarations_are_schema_errors_and_change_nothing(db, attr, options):
    before = core_rows_of(db.connection)
    with pytest.raises(fgraph.SchemaError):
        db.declare(attr, **options)
    assert core_rows_of(db.connection) == before


def test_declare_passes_idempotency_and_basis(db):
    with pytest.raises(fgraph.Conflict):
        db.declare("q/age", type="int", if_basis_tx=64)
    first = db.declare("q/age", type="int", operation_id="d1")
    assert db.declare("q/age", type="int", operation_id="d1")["tx"] == first["tx"]


# -- events, snapshots, stats ----------------------------------------------------------------------

def test_iter_events_streams_lines_that_event_records_parse(db):
    lines = db.iter_events()
    assert inspect.isgenerator(lines)
    lines = list(lines)
    assert len(lines) == 2 and all(isinstance(line, str) and "\n" not in line for line in lines)
    assert db.event_records() == [loads(line) for line in lines]
    txs = sorted({h["tx"] for h in db.history("p/tags")} | {h["tx"] for h in db.history("ada")})
    assert [r["event"] for r in db.event_records()] == [db.receipt(tx)["event"] for tx in txs]
    assert list(db.iter_events(txs[0])) == lines[1:]


def test_snapshot_returns_text_or_writes_it(db):
    text = db.snapshot()
    lines = list(db.iter_snapshot())
    assert text == "".join(line + "\n" for line in lines)
    assert text.endswith("\n") and not text.endswith("\n\n")
    writer = io.StringIO()
    assert db.snapshot(writer) is None
    assert writer.getvalue() == text
    header, footer = loads(lines[0]), loads(lines[-1])
    assert header["basis"] == db.receipt(db.latest_tx())["event"] and header["created_at"] == CONFORMANCE_CLOCK
    assert footer["fgraph"] == "end" and footer["sha256"] == db.logical_digest()


def test_stats_count_what_the_spec_defines(tmp_path):
    path = str(tmp_path / "st.db")
    with fgraph.connect(path, clock=stepping_clock()) as db:
        fresh = {"application_id": 1718055521, "attributes": 18, "blobs": 0, "entities": 18, "facts": 39,
                 "format_version": 2, "live_facts": 39, "transactions": 1}
        assert {k: v for k, v in db.stats().items() if k != "size"} == fresh
        db.transact({"id": "ada", "p/age": 36, "p/bio": "x" * 300})   # ada, p/age, p/bio; 1 + 2 facts; a blob
        db.transact({"id": "ada", "p/age": 37})                      # 2 facts; retracts one
        db.transact([{"id": {"tmp": "t"}, "p/age": 1}])              # an anonymous entity
        stats = db.stats()
        assert stats == {"application_id": 1718055521, "attributes": 20, "blobs": 1, "entities": 22, "facts": 46,
                         "format_version": 2, "live_facts": 45, "size": os.path.getsize(path), "transactions": 4}
        assert stats["size"] > 0


def test_retract_with_value_none_retracts_every_value_as_fgraph_1x_does():
    with fgraph.connect(":memory:", clock=stepping_clock()) as db:
        db.transact([{"id": "p/tags", "fgraph/many": True}, {"id": "ada", "p/tags": ["a", "b"], "p/name": "Ada"}])
        report = db.retract("ada", "p/tags", None)
        assert sorted(fact["v"] for fact in report["retracted"]) == ["a", "b"]
        assert db.entity("ada") == {"p/name": "Ada"}


def test_a_write_inside_an_unfinished_read_is_a_typed_conflict():
    with fgraph.connect(":memory:", clock=stepping_clock()) as db:
        db.transact({"id": "ada", "p/name": "Ada"})
        before = core_rows_of(db.connection)
        lines = db.iter_snapshot()
        next(lines)
        with pytest.raises(fgraph.Conflict, match="unfinished"):
            db.transact({"id": "ada", "p/name": "Ada L"})
        lines.close()
        assert core_rows_of(db.connection) == before
        assert db.transact({"id": "ada", "p/name": "Ada L"})["status"] == "applied"
