"""The doctor of a restored store, reduced to what restore cannot prove as the stream goes by.

Spec 05 §2.7 has restore run the full doctor before COMMIT. Restore writes every row itself from
records it checked, so most of doctor's checks (spec 06 §3.3, ``checkup.CHECKS``) hold by
construction; ``fgraph.streams.restore.proof`` proves the others record by record, on bounded
state; only rules over all live facts at once are left to ``after`` here. For each check:

- integrity_check, layout — ``before``: the destination passes the full doctor before restore
  writes anything (a pristine file: milliseconds); every later page is SQLite's own writing in
  one transaction, and restore adds no object to the main schema (its work table is temporary).
- identities — by construction: restore writes only ``next_id`` and ``created_at``, allocates ids
  upward from ``next_id`` (≥ 65), never names a transaction. Proved: no created name is in the
  reserved ``fgraph/`` namespace.
- fact_rows, value_forms, blobs — by construction: ``next_id`` becomes the last transaction + 1
  and every id written is at most that; fact ids are explicit, in AUTOINCREMENT order (SQLite
  moves ``sqlite_sequence`` itself); entity, attribute and refs are resolved registry ids,
  ``tx``/``rx`` proved transactions, ``rx > tx`` checked per fact; the physical value, its tag
  and its blob (keyed by its own hash) come from ``values.from_tagged``, transact's encoder.
- transactions — by construction: each receipt registers its transaction's identity (its
  event's gid, ``created_tx`` itself) beside its events row, and restore's finish proves each
  one's own fgraph/at holds the receipt's time. Proved: that fgraph/at is live and an instant,
  and no fact uses an identity created after its transaction (ids are allocated in stream order,
  so that is an id larger than the transaction's).
- events — restore's receipt checks (hash, event, ``at``) and, proved: the ``created`` list equals
  the event's (or the event was applied, as its fgraph/imported-at fact shows), derived eids,
  and each stored payload canonical, well formed and not a redaction. A redacted event, a
  redaction or an excision is not proved: those stores get the full doctor.
- genesis, attributes — by construction: only fact 1, ``created_at`` and the genesis event are
  rewritten; new fact ids follow the existing ones; attributes are resolved by a checked name.
  Proved: no fact is asserted by the genesis event.
- agreement (decision 7) — proved, each fact against its asserting and retracting payloads.
- derived (full-text rows, orphaned blobs) — by construction: restore indexes exactly the live
  facts of tags 4 and 8 and writes a blob only for the fact that holds it.
- schema, shapes — ``after``, in SQL (0.04 s at 100,000 events): types, cardinality,
  uniqueness, dimensions and shapes are rules over all live facts together.

When anything was not proved, or ``after`` finds a problem, restore runs the full doctor, which
decides the outcome and its message exactly as it always did.
"""

from __future__ import annotations

import apsw

from fgraph.ops.doctor import logical
from fgraph.ops.doctor.checkup import Checkup, diagnose

# What a restored store still owes the doctor at the end: rules over all live facts at once
# (declarations, cardinality, uniqueness, shapes). Every other check of CHECKS is proved by
# construction or as the stream goes by (decision P1 in docs/snapshot.md).
REMAINING = (logical.schema, logical.shapes)


def before(conn: apsw.Connection) -> bool:
    """The destination, before restore writes anything, passes the full doctor."""
    return diagnose(conn).ok


def after(conn: apsw.Connection) -> bool:
    """The restored store passes the checks restore could not prove as it went."""
    checkup = Checkup(conn)
    try:
        for check in REMAINING:
            check(checkup)
    except apsw.Error:
        return False
    return not checkup.findings.problems
