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
from tests.support.damage import ASSERTING_DAMAGE, DAMAGE, DECIDED, copy_of, damage

CASES = ["clean", *DAMAGE, *ASSERTING_DAMAGE]


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
