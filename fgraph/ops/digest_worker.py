"""A verified copy's logical digest, computed in a process of its own.

Verifying a backup needs both the full doctor and the snapshot digest of the copy. Doctor's
logical checks are Python and hold the GIL (SQLite's integrity check already runs beside them
in a thread), so the digest goes to a second process over the same private, immutable copy:
the two finish in about the time of the longer one instead of their sum. Nothing else writes
the copy, so both read the same state; the basis is compared all the same, and any failure
of the worker (it could not start, died, printed something else) means the digest is
computed here, as before. The digest itself is ``logical_digest``, byte for byte.

    python -c "from fgraph.ops.digest_worker import child; …" PATH   →   {"basis_tx": …, "digest": "…"}
"""

from __future__ import annotations

import subprocess
import sys

import orjson

# Run with -c, not -m: the package imports this module, and runpy warns about that.
CHILD = "import sys; from fgraph.ops.digest_worker import child; sys.exit(child(sys.argv[1:]))"


class DigestWorker:
    """The child computing one copy's digest; ``result()`` is None whenever it cannot be trusted."""

    def __init__(self, proc: subprocess.Popen | None):
        self.proc = proc

    @classmethod
    def start(cls, path: str) -> "DigestWorker":
        try:
            proc = subprocess.Popen([sys.executable, "-c", CHILD, path], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            proc = None
        return cls(proc)

    def result(self) -> dict | None:
        if self.proc is None:
            return None
        out, _ = self.proc.communicate()
        try:
            found = orjson.loads(out) if self.proc.returncode == 0 else None
        except orjson.JSONDecodeError:
            return None
        if not isinstance(found, dict) or type(found.get("basis_tx")) is not int \
                or not isinstance(found.get("digest"), str) or len(found["digest"]) != 64:
            return None
        return found

    def stop(self) -> None:
        """Kill the child if it still runs (verification failed or was interrupted)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def main(argv: list[str]) -> int:
    from fgraph.core.txn import read_transaction
    from fgraph.ops.backup import open_copy
    from fgraph.streams.snapshot import logical_digest

    conn = open_copy(argv[0])
    try:
        with read_transaction(conn):
            basis = conn.execute("SELECT max(tx) FROM fgraph_events").fetchone()[0]
            digest = logical_digest(conn, basis)
    finally:
        conn.close()
    sys.stdout.buffer.write(orjson.dumps({"basis_tx": basis, "digest": digest}))
    return 0


def child(argv: list[str]) -> int:
    try:
        return main(argv)
    except Exception:  # noqa: BLE001 - the parent sees a non-zero exit and computes the digest itself
        return 1
