"""Doctor on two cores for large files: a second process runs SQLite's integrity check and the
asserting half of the agreement walk while this one runs every other check.

The logical checks are Python and hold the GIL, so a thread only overlaps the integrity check
(C). On a large file the asserting walk (every fact in id order against the event that asserted
it, with that event's payload read and parsed beside it) goes to the second process as well:
at 100,000 events it costs about as much as the integrity check, and the two halves then take
about the same time (this process keeps the event pass, the retracting walk and the SQL
checks; issue 34, docs/performance.md). The worker reads through its own read-only
connection: on a file other processes keep writing, it may see a later committed state than
this process, and each half is consistent within its own read transaction (both are checks of
committed states of the same file). Any failure of the worker (it could not start, died,
printed something else) means its checks run here instead, so the report is the same either way.

    python -c "from fgraph.ops.doctor.worker import child; …" PATH
        line 1: {"asserted": [bad, first]}    (first: [fact id, attribute] or null)
        line 2: {"integrity": [[row], …]}
"""

from __future__ import annotations

import os

from fgraph.ops.workers import LineChild, answer, child_main, spawn

CHILD = "import sys; from fgraph.ops.doctor.worker import child; sys.exit(child(sys.argv[1:]))"

# Below this size the worker's start-up (~0.3 s) costs more than it saves.
MIN_BYTES = 48 * 1024 * 1024


def worth_it(path: str) -> bool:
    try:
        size = os.path.getsize(path) + (os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0)
    except OSError:
        return False
    return size >= MIN_BYTES


class CheckWorker(LineChild):
    """The child process; ``asserted()`` and ``integrity()`` are None whenever it cannot be trusted."""

    walks_asserted = True  # doctor takes the asserting walk's answer from ``asserted()``

    def __init__(self, path: str):
        super().__init__(None)
        self.path = path

    def start(self) -> None:
        self.proc = spawn(CHILD, self.path)
        self.failed = self.proc is None

    def asserted(self) -> tuple[int, tuple | None] | None:
        """(disagreeing asserted facts, first as (fact id, attribute) or None), or None to check here."""
        found = self.read("asserted")
        found = found["asserted"] if found is not None else None
        if not (isinstance(found, list) and len(found) == 2 and type(found[0]) is int
                and (found[1] is None or (isinstance(found[1], list) and len(found[1]) == 2))):
            return self.give_up()
        return found[0], tuple(found[1]) if found[1] is not None else None

    def integrity(self) -> list | None:
        """The integrity check's rows, or None to run it here."""
        found = self.read("integrity")
        found = found["integrity"] if found is not None else None
        if not isinstance(found, list):
            return self.give_up()
        self.stop()
        return [tuple(row) for row in found]


def main(argv: list[str]) -> int:
    from fgraph.core.connection import open_connection
    from fgraph.core.txn import read_transaction
    from fgraph.core.payload import payload_bytes, stored_text
    from fgraph.ops.doctor.agreement import FactWalk, Payload
    from fgraph.ops.doctor.physical import integrity_rows

    class _Reader:
        """What ``FactWalk`` needs of a ``Checkup``: the connection and one-row queries."""

        def __init__(self, conn):
            self.conn = conn

        def one(self, sql, args=()):
            return self.conn.execute(sql, args).fetchone()

    conn = open_connection(argv[0], read_only=True)
    try:
        with read_transaction(conn):
            walk = FactWalk(_Reader(conn), asserting=True)
            for tx, data in conn.execute(f"SELECT tx, {payload_bytes()} FROM fgraph_events ORDER BY tx"):
                walk.upto(tx, Payload(stored_text(data)))  # as the event pass drives it
            bad = walk.finish()
        answer({"asserted": [bad, walk.first]})
        answer({"integrity": integrity_rows(conn)})
    finally:
        conn.close()
    return 0


def child(argv: list[str]) -> int:
    return child_main(main, argv)
