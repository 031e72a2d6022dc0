"""Proves that verifying as the stream goes by changes no outcome (issue 34 item 2): the same
snapshot — clean, or mutated and re-sealed in any way, decision 7's contradictions included —
restored through the proof with its reduced final check, and through the full final doctor,
fails with the same error class, message and line, or restores the same rows."""

from __future__ import annotations

import random

import pytest

import fgraph
from fgraph.core.canonical import dumps, loads
from fgraph.ops import doctor
from fgraph.ops.doctor import restored
from fgraph.streams.restore import run as restore_module
from fgraph.streams.restore import proof as restore_proof
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.corerows import core_rows_of
from tests.support.mutations import mutate, reseal


def rich_snapshot(excised: bool = False, applied: str | None = None) -> str:
    """A store with every value type, anonymous entities, refs, replacements, explicit
    retractions, provenance, a declared schema and a shape; ``applied``: the name an event applied
    from another store creates ("ada" is unified with the local one)."""
    db = fgraph.connect(":memory:", clock=lambda: CONFORMANCE_CLOCK)
    try:
        db.declare("p/tags", many=True)
        db.declare("p/email", type="text", unique=True)
        db.declare("p/emb", type="vector", dims=3)
        db.declare_shape("shape/person", required=["p/name"])
        db.transact([{"id": "ada", "p/name": "Ada", "p/age": 36, "p/score": 1.5, "p/email": "ada@x",
                      "p/born": {"instant": "1815-12-10T00:00:00Z"}, "p/raw": {"bytes": "AAEC"},
                      "p/blob": {"bytes": "QUJD" * 100}, "p/bio": "x" * 300, "p/data": {"json": {"k": [0.25, 1]}},
                      "p/emb": {"vector": [0.5, 0.25, 1.0]}, "p/tags": ["a", "b"], "p/ok": True},
                     {"p/anon": "first"}, {"p/anon": "second"}], by="me", source="test", meta={"why": 0.5})
        db.transact({"id": "bob", "p/name": "Bob", "p/friend": {"ref": "ada"}, "p/score": 2.0})
        db.transact({"id": "ada", "p/age": 37, "p/score": 2.5, "p/tags": ["c"]})
        db.retract("bob", "p/friend")
        db.transact({"id": "bob", "p/name": "Robert", "p/emb": {"vector": [1, 2, 3]}})
        db.retract("ada", "p/tags", "a")
        if applied:
            other = fgraph.connect(":memory:", clock=lambda: CONFORMANCE_CLOCK + 1)
            other.transact({"id": applied, "p/name": "Ada elsewhere"})
            db.apply("".join(line + "\n" for line in other.iter_events(since=other.latest_tx() - 1)))
            other.close()
        if excised:
            db.transact({"id": "eve", "p/name": "Eve"})
            db.excise("eve")
        return db.snapshot()
    finally:
        db.close()


def outcome(data, *, proved: bool, calls: list | None = None):
    """Restore ``data`` into a fresh store: through the proof (``proved``) or the full doctor."""
    def full(conn):
        if calls is not None:
            calls.append(True)
        return doctor.diagnose(conn)
    db = fgraph.connect(":memory:", clock=lambda: CONFORMANCE_CLOCK)
    try:
        restore_module.restore(db.connection, data, final_check=full, reduced_check=restored if proved else None)
        return ("ok", core_rows_of(db.connection), db.snapshot())
    except fgraph.FgraphError as exc:
        assert db.stats()["transactions"] == 1          # atomically refused
        return ("error", exc.name, exc.line, str(exc))
    finally:
        db.close()


def both(data):
    calls: list = []
    fast = outcome(data, proved=True, calls=calls)
    assert fast == outcome(data, proved=False)
    return fast, bool(calls)


@pytest.mark.parametrize("kind", ["plain", "applied", "unified", "excised"])
def test_a_clean_snapshot_restores_alike_and_the_full_doctor_runs_only_when_needed(kind):
    text = rich_snapshot(excised=kind == "excised", applied={"applied": "zed", "unified": "ada"}.get(kind))
    result, full_doctor_ran = both(text)
    assert result[0] == "ok" and result[2] == text
    assert full_doctor_ran == (kind == "excised")    # a redacted event is left to the full doctor


# -- decision 7: contradictions only the agreement check catches -----------------------------------
def facts(records, attribute=None):
    return [i for i, r in enumerate(records) if "fact" in r and (attribute is None or r["fact"][1] == attribute)]


def events(records):
    return [r["receipt"]["event"] for r in records if "receipt" in r]


def set_value(attribute, value, which=0):
    def edit(records):
        records[facts(records, attribute)[which]]["fact"][2] = value
    return edit


def move_retraction(attribute, to):
    def edit(records):
        i = next(i for i in facts(records, attribute) if records[i]["fact"][5] is not None)
        records[i]["fact"][5] = events(records)[to]
    return edit


def move_assertion(attribute, to):
    def edit(records):
        records[facts(records, attribute)[0]]["fact"][4] = events(records)[to]
    return edit


def unretract(attribute):
    def edit(records):
        i = next(i for i in facts(records, attribute) if records[i]["fact"][5] is not None)
        records[i]["fact"][5] = None
    return edit


def swap_facts(records):
    first, second = facts(records, "p/name")[:2]
    records[first], records[second] = records[second], records[first]


def swap_entities(records):
    ada, bob = facts(records, "p/name")[:2]
    records[ada]["fact"][0], records[bob]["fact"][0] = records[bob]["fact"][0], records[ada]["fact"][0]


def change_provenance(records):
    records[facts(records, "fgraph/by")[0]]["fact"][2] = "someone else"


def retarget_ref(records):
    records[facts(records, "p/friend")[0]]["fact"][2] = {"ref": "bob"}


def drop_fact(attribute):
    def edit(records):
        del records[facts(records, attribute)[0]]
    return edit


CONTRADICTIONS = {
    "text value": set_value("p/name", "Adb"),
    "int value": set_value("p/age", 99),
    "float value": set_value("p/score", 1.25),
    "float given as an int": set_value("p/score", 3, which=1),
    "json value": set_value("p/data", {"json": {"k": [0.5, 1]}}),
    "long text": set_value("p/bio", "y" * 300),
    "instant": set_value("p/born", {"instant": "1815-12-11T00:00:00Z"}),
    "bytes": set_value("p/raw", {"bytes": "AAED"}),
    "vector": set_value("p/emb", {"vector": [0.5, 0.25, 2.0]}),
    "bool": set_value("p/ok", False),
    "ref": retarget_ref,
    "entity": swap_entities,
    "provenance": change_provenance,
    "retraction moved earlier": move_retraction("p/friend", 2),
    "retraction moved later": move_retraction("p/age", -1),
    "replacement moved": move_retraction("p/score", -1),
    "assertion moved": move_assertion("p/age", 3),
    "retraction dropped": unretract("p/age"),
    "facts out of order": swap_facts,
    "a fact left out": drop_fact("p/age"),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_a_resealed_contradiction_fails_alike_on_both_paths(name):
    records = [loads(line) for line in rich_snapshot().splitlines()]
    CONTRADICTIONS[name](records)
    result, full_doctor_ran = both(reseal([dumps(r) for r in records]))
    # dropping a fact, or giving two facts each other's ids, contradicts no event
    assert result[0] == "error" or name in ("a fact left out", "facts out of order"), result
    if result[0] == "error" and ("disagrees with the event" in result[3] or "fails doctor" in result[3]):
        assert full_doctor_ran      # the doctor's findings come from the doctor itself


def test_every_record_edit_of_the_fact_lines_fails_alike():
    """Each fact's value, entity, attribute and events swapped for another fact's, one at a time."""
    base = [loads(line) for line in rich_snapshot().splitlines()]
    lines = facts(base)
    rng = random.Random(5)
    for _ in range(60):
        records = [loads(dumps(r)) for r in base]
        i, j = rng.sample(lines, 2)
        field = rng.randrange(6)
        records[i]["fact"][field] = records[j]["fact"][field]
        if field == 2:
            records[i]["fact"][3] = records[j]["fact"][3]
        both(reseal([dumps(r) for r in records]))


@pytest.mark.parametrize("seed", range(4))
def test_random_mutations_fail_alike(seed):
    texts = [rich_snapshot(), rich_snapshot(applied="zed")]
    rng = random.Random(seed)
    seen = set()
    for _ in range(40):
        data = mutate(rng.choice(texts), rng, sealed=rng.random() < 0.8)
        result, _ = both(data)
        seen.add(result[1] if result[0] == "error" else "ok")
    assert len(seen) >= 2, seen


def test_a_receipt_leaving_out_names_must_be_an_applied_one():
    """An applied event's receipt leaves out the names that existed here; without its
    fgraph/imported-at fact (and with the times made to agree) it reads as a local event."""
    text = rich_snapshot(applied="ada")
    records = [loads(line) for line in text.splitlines()]
    imported = facts(records, "fgraph/imported-at")[0]
    event = records[imported]["fact"][4]
    receipt = next(r["receipt"] for r in records if "receipt" in r and r["receipt"]["event"] == event)
    at = next(r for r in records if "fact" in r and r["fact"][1] == "fgraph/at" and r["fact"][4] == event)
    del records[imported]
    result, _ = both(reseal([dumps(r) for r in records]))
    assert result[:2] == ("error", "Conflict")          # its receipt's times now disagree
    at["fact"][2] = {"instant": receipt["origin_at"]}    # made to agree: only the created lists differ
    receipt["at"] = receipt["origin_at"]
    result, full_doctor_ran = both(reseal([dumps(r) for r in records]))
    assert result[0] == "error" and full_doctor_ran, result


# -- bounded state --------------------------------------------------------------------------------
def test_tiny_bounds_give_the_same_outcomes(monkeypatch):
    """With room for one waiting retraction and one cached payload, every fact still gets checked."""
    monkeypatch.setattr(restore_proof, "WAITING", 1)
    monkeypatch.setattr(restore_proof, "PAYLOADS_KEPT", 1)
    text = rich_snapshot()
    result, full_doctor_ran = both(text)
    assert result[2] == text and not full_doctor_ran
    records = [loads(line) for line in text.splitlines()]
    move_retraction("p/friend", 2)(records)
    result, _ = both(reseal([dumps(r) for r in records]))
    assert result[:2] == ("error", "Conflict")


def test_a_destination_that_fails_doctor_before_the_restore_gets_the_full_doctor():
    calls: list = []
    db = fgraph.connect(":memory:", clock=lambda: CONFORMANCE_CLOCK)
    try:
        db.connection.execute("DELETE FROM fgraph_fts")     # the genesis texts' full-text rows
        with pytest.raises(fgraph.FormatError, match="full-text index"):
            restore_module.restore(db.connection, rich_snapshot(), reduced_check=restored,
                                   final_check=lambda conn: calls.append(True) or doctor.diagnose(conn))
        assert calls
    finally:
        db.close()


# -- the receipt's payload, cut from the receipt's own canonical bytes -------------------------------
def test_an_anonymous_identity_whose_eid_is_not_derived_from_its_event_fails_alike():
    """The eid replaced everywhere and the event's hash recomputed: only the derivation of 03 §7
    (doctor's registry check) tells."""
    import hashlib
    text = rich_snapshot()
    records = [loads(line) for line in text.splitlines()]
    receipt = next(r["receipt"] for r in records if "receipt" in r
                   and any(isinstance(sel, dict) for sel in r["receipt"]["created"]))
    old = next(sel["eid"] for sel in receipt["created"] if isinstance(sel, dict))
    new = "0" * 8 + old[8:]
    records = [loads(dumps(r).replace(old, new)) for r in records]
    receipt = next(r["receipt"] for r in records if "receipt" in r and {"eid": new} in r["receipt"]["created"])
    receipt["event_hash"] = hashlib.sha256(dumps(receipt["event_data"]).encode()).hexdigest()
    result, full_doctor_ran = both(reseal([dumps(r) for r in records]))
    assert result[:2] == ("error", "FormatError") and "anonymous" in result[3] and full_doctor_ran, result


def test_a_created_name_in_the_reserved_namespace_fails_alike():
    """"ada" renamed "fgraph/ada" everywhere, every event's hash recomputed: doctor counts it an
    invalid system identity."""
    import hashlib
    records = [loads(dumps(r).replace('"ada"', '"fgraph/ada"')) for r in map(loads, rich_snapshot().splitlines())]
    for record in records:
        if "receipt" in record and record["receipt"]["event_data"] is not None:
            receipt = record["receipt"]
            receipt["event_hash"] = hashlib.sha256(dumps(receipt["event_data"]).encode()).hexdigest()
    result, full_doctor_ran = both(reseal([dumps(r) for r in records]))
    assert result[:2] == ("error", "FormatError") and "system identities" in result[3] and full_doctor_ran, result


def test_a_fact_asserted_before_its_entity_was_created_fails_alike():
    """Bob's name moved to the event before Bob's, which is made to list it (its hash recomputed):
    every fact agrees with its events, only the registry's order tells."""
    import hashlib
    records = [loads(line) for line in rich_snapshot().splitlines()]
    bob = next(r["fact"] for r in records if "fact" in r and r["fact"][:2] == ["bob", "p/name"])
    ada = next(r["fact"] for r in records if "fact" in r and r["fact"][:2] == ["ada", "p/name"])
    receipt = next(r["receipt"] for r in records if "receipt" in r and r["receipt"]["event"] == ada[4])
    receipt["event_data"]["asserted"].append(bob[:4])
    receipt["event_hash"] = hashlib.sha256(dumps(receipt["event_data"]).encode()).hexdigest()
    bob[4] = ada[4]
    result, full_doctor_ran = both(reseal([dumps(r) for r in records]))
    assert result[:2] == ("error", "FormatError") and "predate" in result[3] and full_doctor_ran, result


def test_a_transaction_time_that_is_not_an_instant_fails_alike():
    """A transaction's own fgraph/at given as the same microseconds, tagged int: the receipt's
    times still match, its event never lists it, only the doctor's view of a transaction tells."""
    records = [loads(line) for line in rich_snapshot().splitlines()]
    receipt = [r["receipt"] for r in records if "receipt" in r][-1]
    own = next(r["fact"] for r in records if "fact" in r and r["fact"][1] == "fgraph/at"
               and r["fact"][4] == receipt["event"])
    own[2], own[3] = receipt["at"], "int"
    result, full_doctor_ran = both(reseal([dumps(r) for r in records]))
    assert result[:2] == ("error", "FormatError") and full_doctor_ran, result
