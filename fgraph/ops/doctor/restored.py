"""The doctor of a restored store, reduced to what restore cannot prove as the stream goes by.

Restore (``fgraph.streams.restore``) writes every row itself from records it checked, and
proves the rest record by record (``fgraph.streams.restore_proof``: the event pass and
decision 7's agreement). What is left are set-wide rules no single record settles — the
declared schema (types, cardinality, uniqueness, dimensions) and shapes over the live facts —
checked here in SQL, in spec 06 §3.3 order, inside restore's write transaction.

``before(conn)`` runs the full doctor on the pristine destination (a few milliseconds: one
event, 39 facts), so SQLite's integrity check and the layout are proved for the pages restore
did not write. Either function returning False makes restore run the full doctor, which then
decides the outcome and its message.
"""

from __future__ import annotations

import apsw

from fgraph.ops.doctor import logical
from fgraph.ops.doctor.checkup import Checkup, diagnose

# What a restored store still owes the doctor at the end: rules over all live facts at once
# (declarations, cardinality, uniqueness, shapes). Every other check of CHECKS is proved by
# construction or as the stream goes by (docs/restore-verification.md).
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
