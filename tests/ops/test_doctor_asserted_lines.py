"""Proves backup's one pass (``fgraph.ops.doctor.asserted_lines``): the asserting walk checked on
the snapshot's own fact lines counts exactly what doctor's ``FactWalk`` counts (the same bad
facts, the same first one) and leaves the digest byte for byte what it is, on the clean
template and on every class of damage of the catalogue plus damage aimed at the asserting
side; where its bytes could differ from the walk's it gives up, it never answers differently."""

from __future__ import annotations

import pytest

from fgraph.core import connection
from fgraph.core.errors import FormatError
from fgraph.core.txn import read_transaction
from fgraph.ops.doctor.agreement import FactWalk
from fgraph.ops.doctor.asserted_lines import AssertedLines, Undecided
from fgraph.ops.doctor.checkup import Checkup
from fgraph.streams.snapshot import iter_snapshot, logical_digest
from tests.ops.test_doctor import DAMAGE, FIRST, INT_FACT, LAST, copy_of, damage, template  # noqa: F401 - a fixture

LAST_FACT = "(SELECT max(id) FROM fgraph_facts WHERE e <> tx AND tx > 64)"
# Damage the asserting walk sees: each fact then disagrees with (or is missing from) its event.
ASSERTING_DAMAGE = {
    "provenance rewritten": ["UPDATE fgraph_facts SET v = 'someone else' WHERE a = 2"],
    "transaction meta rewritten": ["UPDATE fgraph_facts SET v = '{\"k\":2.5}' WHERE a = 4"],
    "transaction fact rewritten": ["UPDATE fgraph_facts SET v = 'other' WHERE a = (SELECT id FROM fgraph_ids "
                                   "WHERE name = 'audit/tag')"],
    "int becomes a float": [f"UPDATE fgraph_facts SET t = 3, v = v + 0.25 WHERE id = {INT_FACT}"],
    "ref retargeted": ["UPDATE fgraph_facts SET v = (SELECT id FROM fgraph_ids WHERE name = 'bob') WHERE t = 0 "
                       "AND tx > 64 AND e <> tx"],
    "json value rewritten": ["UPDATE fgraph_facts SET v = '{\"k\":[2.5,null]}' WHERE t = 10 AND tx > 64"],
    "excision marker moved": ["UPDATE fgraph_facts SET e = tx - 1 WHERE a = 11"],
    # out of transaction order: the pass looks the event up, as the walk does
    "fact moved to an earlier transaction": [f"UPDATE fgraph_facts SET tx = {FIRST} WHERE id = {LAST_FACT}"],
    "fact moved past the latest event": [f"UPDATE fgraph_facts SET tx = {LAST} + 1 WHERE id = {LAST_FACT}"],
    "asserting payload redacted": [f"UPDATE fgraph_events SET event_data = NULL WHERE tx = {LAST}"],
    "attribute loses its name": ["UPDATE fgraph_ids SET name = NULL, gid = randomblob(16) WHERE name = 'p/age'"],
}
CASES = ["clean", *DAMAGE, *ASSERTING_DAMAGE]
# The pass must decide these itself (the walk on clean stores and asserting-side damage).
DECIDED = ["clean", "fact value rewritten", "fact moved to another entity", "provenance rewritten",
           "transaction meta rewritten", "transaction fact rewritten", "int becomes a float", "ref retargeted",
           "json value rewritten", "excision marker moved", "fact moved to an earlier transaction",
           "asserting payload redacted"]


def both_ways(path: str):
    """(plain walk's (bad, first), plain digest or the exception type), then the same from the pass
    (None when it gave up)."""
    try:
        conn = connection.open_immutable_copy(path)
    except FormatError:
        return None
    try:
        with read_transaction(conn):
            walk = FactWalk(Checkup(conn), asserting=True)
            plain = (walk.finish(), walk.first)
            try:
                digest = logical_digest(conn)
            except Exception as exc:  # noqa: BLE001 - compared below
                digest = type(exc)
            observer = AssertedLines(conn)
            try:
                fused = (observer.result(), logical_digest(conn, None, observer))
                fused = (observer.result(), fused[1])
            except Undecided:
                fused = "undecided"
            except Exception as exc:  # noqa: BLE001
                fused = type(exc)
    finally:
        conn.close()
    return (plain, digest), fused


@pytest.mark.parametrize("case", CASES)
def test_the_pass_counts_what_the_walk_counts(template, tmp_path, case):
    path = copy_of(template, tmp_path)
    if case in DAMAGE:
        damage(path, DAMAGE[case][0])
    elif case in ASSERTING_DAMAGE:
        damage(path, ASSERTING_DAMAGE[case])
    found = both_ways(path)
    if found is None:  # the damage stops the open: neither way runs
        return
    (plain, digest), fused = found
    if isinstance(digest, type):  # the snapshot itself stops: so does the pass, with the same error
        assert fused is digest or fused == "undecided", (case, fused, digest)
    elif fused == "undecided":
        assert case not in DECIDED
    else:
        assert fused == (plain, digest), case
    if case in DECIDED:
        assert fused == (plain, digest), (case, fused, plain)
    if case in ASSERTING_DAMAGE and case in DECIDED and case != "asserting payload redacted":
        assert plain[0] >= 1 and plain[1] is not None, case  # the damage is seen at all


def test_an_attribute_without_a_name_is_left_to_the_walk(template, tmp_path):
    path = copy_of(template, tmp_path)
    damage(path, ASSERTING_DAMAGE["attribute loses its name"])
    (plain, _), fused = both_ways(path)
    assert fused == "undecided" and plain[0] >= 1


def test_the_observer_sees_every_fact_line_in_order(template):
    conn = connection.open_immutable_copy(template)
    try:
        with read_transaction(conn):
            seen = []

            class Recorder(AssertedLines):
                def fact(self, fact_id, e, a, tx, a_name, entity, attribute, value, tag):
                    seen.append('{"fact":[%s,%s,%s,"%s",' % (entity, attribute, value, tag))
                    super().fact(fact_id, e, a, tx, a_name, entity, attribute, value, tag)

            recorder = Recorder(conn)
            digest = logical_digest(conn, None, recorder)
            lines = [line for line in iter_snapshot(conn) if line.startswith('{"fact":')]
            footer = list(iter_snapshot(conn))[-1]
    finally:
        conn.close()
    assert len(seen) == len(lines) > 20
    assert all(line.startswith(prefix) for prefix, line in zip(seen, lines))
    assert footer.endswith('"sha256":"%s"}' % digest) and recorder.result() == (0, None)
