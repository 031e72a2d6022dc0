"""A verified copy's integrity check and logical digest, computed in a process of its own.

Verifying a backup needs the full doctor and the snapshot digest of the copy. Doctor's logical
checks are Python and hold the GIL, so SQLite's integrity check and the digest go to a second
process over the same private, immutable copy: the two processes finish in about the time of
the longer one instead of the sum (a thread for the integrity check beside this process, as
plain doctor uses, would make three activities share two cores). Nothing else writes the copy,
so both read the same state; the basis is compared all the same, and any failure of the worker
(it could not start, died, printed something else) means the work is done here instead. The
digest itself is ``logical_digest``, byte for byte.

    python -c "from fgraph.ops.digest_worker import child; …" PATH
        line 1: {"integrity": [[row], …]}
        line 2: {"basis_tx": …, "digest": "…"}
"""

from __future__ import annotations

import subprocess

from fgraph.ops.workers import LineChild, answer, child_main, spawn

CHILD = "import sys; from fgraph.ops.digest_worker import child; sys.exit(child(sys.argv[1:]))"


class DigestWorker(LineChild):
    """The child checking one copy's integrity, then computing its digest; ``integrity()`` and
    ``result()`` are None whenever the child cannot be trusted (the caller then does the work)."""

    def __init__(self, proc: subprocess.Popen | None):
        super().__init__(proc)
        self.integrity_rows: list | None = None
        self.integrity_read = False

    @classmethod
    def start(cls, path: str) -> "DigestWorker":
        return cls(spawn(CHILD, path))

    def integrity(self) -> list | None:
        """``PRAGMA integrity_check``'s rows from the child (its first line)."""
        if not self.integrity_read:
            self.integrity_read = True
            found = self.read()
            rows = found.get("integrity") if found is not None else None
            if isinstance(rows, list) and all(isinstance(r, list) for r in rows):
                self.integrity_rows = [tuple(r) for r in rows]
            else:
                self.give_up()
        return self.integrity_rows

    def result(self) -> dict | None:
        """``{"basis_tx", "digest"}`` from the child (its second line)."""
        if self.integrity() is None:
            return None
        found = self.read()
        self.stop()  # its work is done (or worthless): reap it
        if found is None or type(found.get("basis_tx")) is not int \
                or not isinstance(found.get("digest"), str) or len(found["digest"]) != 64:
            return None
        return found


class _IntegrityOf:
    """The worker seen as doctor's parallel integrity check (what ``physical.IntegrityThread`` offers)."""

    def __init__(self, worker: DigestWorker):
        self.worker = worker

    def result(self):
        return self.worker.integrity()

    def join(self) -> None:
        pass


def integrity_source(worker: DigestWorker) -> _IntegrityOf:
    return _IntegrityOf(worker)


def main(argv: list[str]) -> int:
    from fgraph.core.txn import read_transaction
    from fgraph.core.connection import open_immutable_copy
    from fgraph.ops.doctor.physical import integrity_rows
    from fgraph.streams.snapshot import logical_digest

    conn = open_immutable_copy(argv[0])
    try:
        answer({"integrity": integrity_rows(conn)})
        with read_transaction(conn):
            basis = conn.execute("SELECT max(tx) FROM fgraph_events").fetchone()[0]
            digest = logical_digest(conn, basis)
    finally:
        conn.close()
    answer({"basis_tx": basis, "digest": digest})
    return 0


def child(argv: list[str]) -> int:
    return child_main(main, argv)
