"""Which names and gids a restore has surely not registered yet, from fixed memory.

Every receipt asks whether its event and each identity it creates are already in the registry
(a snapshot creates each identity once, spec 05 §2). On a stream that restores, every answer is
"no", and each "no" used to cost a query. ``Absent`` is a Bloom filter over every name and gid
in ``fgraph_ids``: the destination's rows at the start, then each row restore registers (added
before it is written). A filter has no false negatives, so "surely absent" is exact; "maybe
present" falls back to the registry query, so every answer, and so every check and its error,
is the same as asking SQLite. Its size is fixed (``BITS``): past a few million identities it
answers "maybe" more often, which costs queries, never a wrong answer.
"""

from __future__ import annotations

BITS = 1 << 23        # 1 MiB of filter
MASK = BITS - 1


class Absent:
    """A Bloom filter (two probes from one ``hash``) over registry names (str) and gids (bytes)."""

    def __init__(self, conn=None):
        self.bits = bytearray(BITS >> 3)
        if conn is not None:
            for name, gid in conn.execute("SELECT name, gid FROM fgraph_ids"):
                if name is not None:
                    self.add(name)
                if gid is not None:
                    self.add(gid)

    def add(self, key) -> None:
        h = hash(key)
        bits = self.bits
        i, j = h & MASK, (h >> 32) & MASK
        bits[i >> 3] |= 1 << (i & 7)
        bits[j >> 3] |= 1 << (j & 7)

    def surely_absent(self, key) -> bool:
        """True only when ``key`` was never added (no false negatives)."""
        h = hash(key)
        bits = self.bits
        i = h & MASK
        if not bits[i >> 3] & (1 << (i & 7)):
            return True
        j = (h >> 32) & MASK
        return not bits[j >> 3] & (1 << (j & 7))
