"""Proves the reduced doctor of a restored store (fgraph.ops.doctor.restored): ``before`` is the
full doctor of the destination, ``after`` finds what only a look at all live facts finds (schema
and shapes), and restore through it refuses such a snapshot with the full doctor's own message."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.core.canonical import dumps, loads
from fgraph.ops import doctor
from fgraph.ops.doctor import restored
from fgraph.streams.restore import run as restore_module
from tests.support.mutations import reseal


def test_a_pristine_store_passes_before_and_after():
    with fgraph.connect(":memory:") as db:
        assert restored.before(db.connection) and restored.after(db.connection)


def test_before_is_the_full_doctor():
    with fgraph.connect(":memory:") as db:
        db.connection.execute("UPDATE fgraph_meta SET value = value + 1 WHERE key = 'next_id'")
        assert not restored.before(db.connection)
        assert not doctor.diagnose(db.connection).ok


def _cardinality_broken() -> str:
    """A snapshot whose p/name (cardinality one) has two live values: each fact agrees with its
    own event, only the live facts taken together break the schema."""
    with fgraph.connect(":memory:") as db:
        db.transact({"id": "ada", "p/name": "Ada"})
        db.transact({"id": "ada", "p/name": "Ada L."})
        records = [loads(line) for line in db.snapshot().splitlines()]
    first = next(r for r in records if "fact" in r and r["fact"][1] == "p/name")
    first["fact"][5] = None             # no longer retracted by the second event
    return reseal([dumps(r) for r in records])


def test_after_finds_a_schema_violation_and_restore_reports_the_full_doctors_message():
    text = _cardinality_broken()
    outcomes = []
    for reduced in (restored, None):
        with fgraph.connect(":memory:") as db:
            with pytest.raises(fgraph.FormatError) as caught:
                restore_module.restore(db.connection, text, final_check=doctor.diagnose, reduced_check=reduced)
            outcomes.append((caught.value.line, str(caught.value)))
    assert outcomes[0] == outcomes[1] and "schema invariants violated" in outcomes[0][1]


def test_after_reads_only_the_schema_and_shapes():
    assert [check.__name__ for check in restored.REMAINING] == ["schema", "shapes"]
