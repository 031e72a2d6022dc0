"""Proves streams/restore/run.py on its own: a restore runs the caller's final check inside its write
transaction and commits only when that check is ok; any failure leaves the destination pristine."""

from __future__ import annotations

import os
import random

import pytest

import fgraph
from fgraph.core.canonical import dumps
from fgraph.streams.restore import run as restore_module
from fgraph.streams.restore import registry as restore_registry
from tests.support.corerows import core_rows
from tests.support.peerlib import deterministic_env
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.restore_outcome import restore_outcome


def snapshot_text() -> str:
    with deterministic_env():
        db = fgraph.connect(":memory:")
        try:
            db.transact([{"id": "ada", "p/n": 1, "p/s": "x" * 300}, {"p/anon": True}])
            db.transact(["retract", "ada", "p/n"])
            return db.snapshot()
        finally:
            db.close()


def test_final_check_runs_inside_the_transaction_and_can_refuse():
    text = snapshot_text()
    db = fgraph.connect(":memory:")
    try:
        seen = []

        def refusing(conn):
            seen.append(conn.getautocommit())
            return {"ok": False, "problems": ["planted"]}

        with pytest.raises(fgraph.FormatError, match="planted"):
            restore_module.restore(db.connection, text, final_check=refusing)
        assert seen == [False]                       # called inside the write transaction
        assert db.stats()["transactions"] == 1       # still pristine
        assert db.restore(text, details=True)["ok"] is True        # the real doctor accepts it
        assert db.snapshot() == text
    finally:
        db.close()


@pytest.mark.parametrize("cut", [1, 2, -1])
def test_a_truncated_snapshot_leaves_the_destination_pristine(cut):
    lines = snapshot_text().splitlines(keepends=True)
    text = "".join(lines[:cut])
    db = fgraph.connect(":memory:")
    try:
        with pytest.raises(fgraph.FgraphError):
            db.restore(text)
        assert db.stats()["transactions"] == 1
    finally:
        db.close()


def _contradicted(mutate) -> fgraph.FgraphError:
    from tests.support.mutations import records_of, reseal_records
    with fgraph.connect(":memory:") as source:
        source.transact({"id": "ada", "p/name": "Ada", "p/age": 36, "p/friend": {"ref": "bob"}})
        source.transact({"id": "bob", "p/name": "Bob"})
        source.transact({"id": "ada", "p/age": 37})
        source.retract("ada", "p/friend")
        records = records_of(source.snapshot())
    line = mutate(records)
    with fgraph.connect(":memory:") as db:
        with pytest.raises(fgraph.FgraphError) as caught:
            db.restore(reseal_records(records))
        assert db.stats()["transactions"] == 1  # atomically refused
    return caught.value, line


def test_a_contradicting_fact_is_refused_at_its_own_line():
    """Decision 7 is checked by the final doctor's one pass; the refusal still names the first
    contradicting record's line and the event it contradicts."""
    def rewrite_second_name(records):
        names = [i for i, r in enumerate(records) if "fact" in r and r["fact"][1] == "p/name"]
        records[names[1]]["fact"][2] = "Robert"
        return names[1] + 1

    error, line = _contradicted(rewrite_second_name)
    assert error.name == "Conflict" and error.line == line
    assert "a p/name fact disagrees with the event that asserted it" in str(error)


def test_a_fact_retracted_by_the_wrong_event_is_refused_at_its_own_line():
    def move_retraction(records):
        friend = next(i for i, r in enumerate(records) if "fact" in r and r["fact"][1] == "p/friend")
        events = [r["receipt"]["event"] for r in records if "receipt" in r]
        records[friend]["fact"][5] = events[-2]  # the p/age update, which never mentions p/friend
        return friend + 1

    error, line = _contradicted(move_retraction)
    assert error.name == "Conflict" and error.line == line
    assert "a p/friend fact disagrees with the event that retracted it" in str(error)


def test_restore_gives_back_the_connections_temp_cache_size():
    text = snapshot_text()
    with fgraph.connect(":memory:") as db:
        db.connection.execute("PRAGMA temp.cache_size = -3000")
        with pytest.raises(fgraph.FgraphError):
            db.restore(text + "{}\n")                # a record after the footer: refused
        assert db.connection.execute("PRAGMA temp.cache_size").fetchone()[0] == -3000
        db.restore(text)
        assert db.connection.execute("PRAGMA temp.cache_size").fetchone()[0] == -3000


# -- fact rows written in batches ---------------------------------------------------------
def _batched_and_row_by_row(tmp_path, monkeypatch, data: bytes, label: str, batch: int):
    outcomes = []
    for rows in (batch, 1):      # 1: every fact row written as its record is read
        monkeypatch.setattr(restore_module, "RESTORE_BATCH_ROWS", rows)
        outcomes.append(restore_outcome(tmp_path / f"{label}-{rows}.db", data))
    return outcomes


def test_a_repeated_fact_is_refused_at_its_line_even_when_a_later_line_is_bad(tmp_path, monkeypatch):
    """Batching must not change which error wins: the repeated live fact (refused by SQLite)
    is reported at its own line, before a malformed record that follows it."""
    source = tmp_path / "src.db"
    db = fgraph.connect(str(source))
    db.transact([{"id": f"e{i}", "p/n": f"v{i}"} for i in range(6)])
    lines = list(db.iter_snapshot())
    db.close()
    facts = [i for i, line in enumerate(lines) if line.startswith('{"fact"')]
    repeated = lines[: facts[-1] + 1] + [lines[facts[-1]]] + lines[facts[-1] + 1:]
    from tests.support.mutations import reseal
    sealed = reseal([line.rstrip("\n") for line in repeated])
    body = sealed.splitlines(keepends=True)
    broken = "".join(body[:-1]) + '{"fact": [\n'          # the footer is not even JSON
    assert broken != sealed
    for label, data in (("sealed", sealed), ("broken", broken)):
        bulk, single = _batched_and_row_by_row(tmp_path, monkeypatch, data.encode(), label, 4096)
        assert bulk == single
        assert bulk[0][:3] == ("error", "FormatError", facts[-1] + 2), bulk[0]


def test_batched_fact_rows_match_row_by_row_on_mutated_snapshots(tmp_path, monkeypatch):
    from tests.support.mutations import mutate
    source = tmp_path / "src.db"
    db = fgraph.connect(str(source))
    db.declare("p/knows", ref=True, many=True)
    for i in range(8):
        db.transact({"id": f"e{i}", "p/n": f"v{i}", "p/bio": "x" * (300 + i), "p/knows": {"ref": f"e{i // 2}"}})
        db.transact(["retract", f"e{i}", "p/n", f"v{i}"])
    text = "".join(line if line.endswith("\n") else line + "\n" for line in db.iter_snapshot())
    db.close()
    rng = random.Random(17)
    seen = set()
    for n in range(80):
        data = text.encode() if n == 0 else mutate(text, rng, sealed=rng.random() < 0.7)
        bulk, single = _batched_and_row_by_row(tmp_path, monkeypatch, data, f"m{n}", rng.choice([2, 5, 4096]))
        assert bulk == single, (n, bulk[0], single[0])
        seen.add(bulk[0][1] if bulk[0][0] == "error" else "ok")
    assert "ok" in seen and len(seen) >= 3, seen


def test_an_event_hash_with_a_trailing_newline_is_refused(tmp_path):
    source = fgraph.connect(str(tmp_path / "s.db"))
    source.transact({"id": "x", "p/n": 1})
    lines = [line.rstrip("\n") for line in source.iter_snapshot()]
    source.close()
    from fgraph.core.canonical import loads as parse
    from tests.support.mutations import reseal
    records = [parse(line) for line in lines]
    for record in records:
        if isinstance(record, dict) and "receipt" in record and record["receipt"]["event_data"] is not None:
            record["receipt"]["event_hash"] += "\n"
            break
    data = reseal([dumps(record) for record in records])
    outcome, _ = restore_outcome(tmp_path / "t.db", data.encode())
    assert outcome[:2] == ("error", "TypeError"), outcome


# -- receipt rows written in batches ----------------------------------------------------------
def _receipt_batches(tmp_path, monkeypatch, data: bytes, label: str, batch: int):
    outcomes = []
    for size in (batch, 1):      # 1: every receipt's rows written as its record is read
        monkeypatch.setattr(restore_registry, "RECEIPT_BATCH", size)
        db = fgraph.connect(str(tmp_path / f"{label}-{size}.db"), clock=lambda: CONFORMANCE_CLOCK)
        try:
            db.restore(data)
            result = ("ok",)
        except Exception as exc:  # noqa: BLE001 - a row SQLite refuses surfaces as its own error
            result = ("error", type(exc).__name__, getattr(exc, "line", None), str(exc))
        finally:
            db.close()
        outcomes.append((result, core_rows(str(tmp_path / f"{label}-{size}.db"))))
    return outcomes


def _receipt_snapshot() -> str:
    db = fgraph.connect(":memory:")
    try:
        for i in range(8):
            db.transact([{"id": f"e{i}", "p/n": f"v{i}"}, {"p/anon": i}], operation_id=f"op-{i % 3}-{i}")
            db.transact({"id": f"e{i}", "p/m": i})
        return "".join(line + "\n" for line in db.iter_snapshot())
    finally:
        db.close()


def _refused_receipt_cases() -> dict:
    """Re-sealed snapshots with a receipt whose rows SQLite itself refuses: an operation id used
    twice, a name repeated inside one receipt, the receipt's own event created as an eid."""
    from tests.support.mutations import records_of, reseal_records
    text = _receipt_snapshot()
    cases = {}
    records = records_of(text)
    receipts = [r["receipt"] for r in records if "receipt" in r]
    with_op = [r for r in receipts if r["operation_id"] is not None]
    with_op[-1]["operation_id"], with_op[-1]["request_hash"] = with_op[0]["operation_id"], with_op[0]["request_hash"]
    cases["operation id twice"] = reseal_records(records)
    for name, created in (("name twice", lambda r: r["created"] + r["created"][:1]),
                          ("own event as eid", lambda r: r["created"] + [{"eid": r["event"]}])):
        records = records_of(text)
        r = [x["receipt"] for x in records if "receipt" in x and x["receipt"]["created"]][5]   # one that creates
        r["created"], r["event_data"] = created(r), None
        cases[name] = reseal_records(records)
    return cases


REFUSED_AS = {"operation id twice": (fgraph.FormatError, "cannot be stored"),
              "own event as eid": (fgraph.FormatError, "cannot be stored"),
              "name twice": (fgraph.Conflict, "created twice")}


def test_a_receipt_sqlite_would_refuse_is_a_typed_error_at_its_line_and_nothing_is_written(tmp_path):
    """An operation id used twice or a receipt's own event created as an eid is FormatError, a
    name listed twice in one receipt Conflict (spec 05 §2.5 step 3), as the published runtime
    says; this runtime said "internal error" (a raw apsw.ConstraintError) for all three until
    issue 34's review found it."""
    cases = _refused_receipt_cases()
    assert set(cases) == set(REFUSED_AS)
    for label, data in cases.items():
        error, words = REFUSED_AS[label]
        refused = next(i for i, line in enumerate(data.splitlines(), 1)
                       if line.startswith('{"receipt"') and _refused_here(data, i))
        path = tmp_path / f"{label.replace(' ', '-')}.db"
        with fgraph.connect(str(path), clock=lambda: CONFORMANCE_CLOCK) as db:
            with pytest.raises(error, match=words) as caught:
                db.restore(data.encode())
            assert caught.value.line == refused, (label, caught.value.line, refused)
            assert db.latest_tx() == 64, label   # still pristine: the whole restore rolled back


@pytest.mark.peer
def test_the_published_runtime_names_the_same_errors_for_those_receipts(tmp_path):
    from tests.support.peerlib import CliError, peer, run_cli, our_executable
    if not os.environ.get("FGRAPH_PEER"):
        pytest.skip("FGRAPH_PEER is not set: the published runtime decides the error names")
    for label, data in _refused_receipt_cases().items():
        (tmp_path / "s.ndjson").write_text(data)
        names = []
        for run in (lambda p, *a: peer(p, *a), lambda p, *a: run_cli(our_executable(), p, *a)):
            with pytest.raises(CliError) as caught:
                run(tmp_path / f"{len(names)}-{label.replace(' ', '-')}.db", "restore", str(tmp_path / "s.ndjson"))
            names.append(caught.value.name)
        assert names[0] == names[1] == REFUSED_AS[label][0].__name__.replace("ValueTypeError", "TypeError"), \
            (label, names)


def _refused_here(data: str, line: int) -> bool:
    """Whether the first ``line`` lines already hold a receipt SQLite refuses (the stream cut after
    them still fails on UNIQUE, not only on the missing footer)."""
    from fgraph.core.canonical import loads
    records = [loads(x) for x in data.splitlines()[:line]]
    receipts = [r["receipt"] for r in records if isinstance(r, dict) and "receipt" in r]
    ops = [r["operation_id"] for r in receipts if r["operation_id"] is not None]
    last = receipts[-1]
    keys = [c if isinstance(c, str) else c["eid"] for c in last["created"]] + [last["event"]]
    return len(set(ops)) != len(ops) or len(set(keys)) != len(keys)


def test_waiting_receipt_rows_end_alike_when_sqlite_would_refuse_one(tmp_path, monkeypatch):
    """Rows SQLite may refuse (an operation id used twice, a name or gid repeated inside one
    receipt) are written at their own receipt, so the outcome is the same batched or not."""
    cases = _refused_receipt_cases()
    for label, data in list(cases.items()):  # and a line that is not JSON after it: refused at once
        lines = data.splitlines(keepends=True)
        last_receipt = max(i for i, line in enumerate(lines) if line.startswith('{"receipt"'))
        cases[label + " then garbage"] = "".join(lines[:last_receipt + 1] + ["{not json\n"] + lines[last_receipt + 1:])
    seen = set()
    for label, data in cases.items():
        batched, single = _receipt_batches(tmp_path, monkeypatch, data.encode(), label.replace(" ", "-"), 256)
        assert batched == single, (label, batched[0], single[0])
        seen.add(batched[0][:3])   # kind, class and line: every case a refusal is FormatError now
    assert all(result[0] == "error" for result in seen) and len(seen) >= 2, seen


def test_batched_receipt_rows_match_row_by_row_on_mutated_snapshots(tmp_path, monkeypatch):
    from tests.support.mutations import mutate
    text = _receipt_snapshot()
    rng = random.Random(29)
    seen = set()
    for n in range(60):
        data = text.encode() if n == 0 else mutate(text, rng, sealed=rng.random() < 0.7)
        batched, single = _receipt_batches(tmp_path, monkeypatch, data, f"r{n}", rng.choice([2, 3, 256]))
        assert batched == single, (n, batched[0], single[0])
        seen.add(batched[0][1] if batched[0][0] == "error" else "ok")
    assert "ok" in seen and len(seen) >= 3, seen
