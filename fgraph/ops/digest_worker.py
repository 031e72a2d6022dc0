"""A verified copy's integrity check, logical digest and asserting agreement walk, in a process
of its own: backup's one pass.

Verifying a backup needs the full doctor and the snapshot digest of the copy. Doctor's logical
checks are Python and hold the GIL, so the second process takes SQLite's integrity check (in a
thread of its own: it runs in C, beside the Python) and one pass over the copy that makes the
snapshot's lines for the digest and checks, on the same bytes, every fact against the event
that asserted it (``asserted_lines``): the walk doctor would otherwise make in this process.
This process keeps every other check. Nothing else writes the private, immutable copy, so both
read the same state; the basis is compared all the same, and any failure of the worker (it
could not start, died, gave up on a damaged file, printed something else) means that work is
done here instead, so the report and the digest are the same either way. The digest itself is
``logical_digest``, byte for byte.

    python -c "from fgraph.ops.digest_worker import child; …" PATH
        line 1: {"integrity": [[row], …]}
        line 2: {"asserted": [bad, first], "basis_tx": …, "digest": "…"}   (first: [fact id, attribute] or null)
"""

from __future__ import annotations

import subprocess

from fgraph.ops.workers import LineChild, answer, child_main, spawn

CHILD = "import sys; from fgraph.ops.digest_worker import child; sys.exit(child(sys.argv[1:]))"
# Reads of the private copy go through a memory map of at most this much of the file: a page is
# then read without being copied into SQLite's cache (at 100,000 events the integrity check takes
# 0.3 s less CPU). Mapped I/O turns a file truncated underneath, or a media error, into a signal
# instead of an SQLite error, which is why only the private scratch copy we just wrote, which
# nothing else opens, is read this way (doctor on a user's file is not).
COPY_MAP_BYTES = 256 * 1024 * 1024


def map_private_copy(conn) -> None:
    """Read the private, immutable scratch copy open on ``conn`` through a memory map."""
    conn.execute(f"PRAGMA mmap_size = {COPY_MAP_BYTES}")


class DigestWorker(LineChild):
    """The child verifying one copy; ``integrity()``, ``asserted()`` and ``result()`` are None
    whenever the child cannot be trusted (the caller then does that work)."""

    walks_asserted = True  # doctor takes the asserting walk's answer from ``asserted()``

    def __init__(self, proc: subprocess.Popen | None):
        super().__init__(proc)
        self.integrity_rows: list | None = None
        self.integrity_read = self.proof_read = False
        self.proof: dict | None = None

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

    def _proof(self) -> dict | None:
        """The child's second line, checked for shape."""
        if not self.proof_read and self.integrity() is not None:
            self.proof_read = True
            found = self.read()
            if found is None:
                return None
            asserted, first = found.get("asserted"), None
            if isinstance(asserted, list) and len(asserted) == 2:
                first = asserted[1]
            if not (isinstance(asserted, list) and len(asserted) == 2 and type(asserted[0]) is int
                    and asserted[0] >= 0 and (first is None or (isinstance(first, list) and len(first) == 2
                                                                and type(first[0]) is int))
                    and type(found.get("basis_tx")) is int and isinstance(found.get("digest"), str)
                    and len(found["digest"]) == 64):
                return self.give_up()
            self.proof = found
        return self.proof

    def asserted(self) -> tuple[int, tuple | None] | None:
        """(disagreeing asserted facts, first as (fact id, attribute) or None), or None to walk here."""
        proof = self._proof()
        if proof is None:
            return None
        bad, first = proof["asserted"]
        return bad, tuple(first) if first is not None else None

    def result(self) -> dict | None:
        """``{"basis_tx", "digest"}`` from the child."""
        proof = self._proof()
        self.stop()  # its work is done (or worthless): reap it
        return None if proof is None else {"basis_tx": proof["basis_tx"], "digest": proof["digest"]}


def main(argv: list[str]) -> int:
    import threading

    from fgraph.core.connection import open_immutable_copy
    from fgraph.core.txn import read_transaction
    from fgraph.ops.doctor.asserted_lines import AssertedLines
    from fgraph.ops.doctor.physical import integrity_rows
    from fgraph.streams.snapshot import logical_digest

    def check_integrity() -> None:
        conn = open_immutable_copy(argv[0])
        try:
            map_private_copy(conn)
            answer({"integrity": integrity_rows(conn)})
        finally:
            conn.close()

    integrity = threading.Thread(target=check_integrity, name="fgraph-copy-integrity", daemon=True)
    integrity.start()
    conn = open_immutable_copy(argv[0])
    try:
        map_private_copy(conn)
        with read_transaction(conn):
            basis = conn.execute("SELECT max(tx) FROM fgraph_events").fetchone()[0]
            walk = AssertedLines(conn)
            digest = logical_digest(conn, basis, walk)
    finally:
        conn.close()
        integrity.join()  # its line comes first, whatever happened here
    answer({"asserted": list(walk.result()), "basis_tx": basis, "digest": digest})
    return 0


def child(argv: list[str]) -> int:
    return child_main(main, argv)
