"""An optional approximate index over one vector attribute (issue 34 item 4; docs/search.md V1).

Exact vector search reads every stored vector: linear in the vectors, so at a million of them
it cannot stay near its cost on a small store. With ``FGRAPH_VECTOR_INDEX=1`` and the extra
``fgraph[vectors]`` (the ``usearch`` package: an HNSW graph in one file), the vector list asks
an index beside the database for its nearest candidates, then reads those facts from SQLite
and scores them exactly, as the exact list does (``fgraph.query.search.lists._Scorer``): ranks and scores are
exact for the candidates, and whether the true top k are among them is the index's recall,
measured by ``benchmarks/vector_index.py``. The format stays extension-free: the index is a
derived file that can be deleted at any time.

The index is a copy of vectors, so it must forget what the store forgets. It records the basis
it was built at; a search at a later basis reads the events since then (their number is bounded
by ``REBUILD_EVENTS``): new vectors of the attribute are scored exactly beside the index, and
any event that retracts a value of the attribute, excises, or is not a plain event/1 record
makes the search rebuild the index from the store before it answers — so a retracted or
excised vector never outlives the next indexed search. Files are written atomically beside the
database, never through a link (``fgraph.core.files``), and read through a descriptor opened
without following links.
"""

from __future__ import annotations

import itertools
import os

import orjson

from fgraph.core import files, sidecars
from fgraph.core.canonical import loads
from fgraph.core.errors import FgraphError, Unsupported
from fgraph.core.limits import EVENT_KEYS
from fgraph.core.payload import payload_bytes, verified_text
from fgraph.core.settings import VECTOR_INDEX, read
from fgraph.core.values import TAG_VECTOR

FORMAT = sidecars.VECTOR_INDEX_FORMAT   # what proves the metadata (and so the index beside it) fgraph's
REBUILD_EVENTS = 5000      # events since the index's basis read before a rebuild is cheaper
CANDIDATES = 8             # candidates asked of the index per entity of the list's cap
MIN_VECTORS = 20_000       # below this many, no index is built (the exact list is faster, docs/search.md V1)
WIDEST = 512               # candidates per entity of the cap past which the exact list answers instead
META_LIMIT = 4096

usearch_module = None


def enabled() -> bool:
    return read(VECTOR_INDEX) == "1"


def _load_usearch():
    global usearch_module
    if usearch_module is None:
        try:
            from usearch import index as module
        except ImportError:
            raise Unsupported("FGRAPH_VECTOR_INDEX=1 needs the usearch package",
                              "install the extra: pip install 'fgraph[vectors]', or unset FGRAPH_VECTOR_INDEX") from None
        usearch_module = module
    return usearch_module


def for_search(conn, a: int, name: str, dims, basis: int):
    """The up-to-date index of ``a`` for a search at ``basis``, or None when the exact list serves
    (the setting is off, the store is in memory, no dims fix the vectors' length, or there is no
    index yet and fewer than ``MIN_VECTORS`` vectors)."""
    if not enabled() or dims is None:
        return None
    db_path = conn.db_filename("main")
    if not db_path:
        return None
    (created,) = conn.execute("SELECT value FROM fgraph_meta WHERE key = 'created_at'").fetchone()
    index = VectorIndex(conn, db_path, a, name, dims, basis, str(created))
    if not os.path.lexists(index.meta_path) and conn.execute(
            f"SELECT count(*) FROM fgraph_facts WHERE a = ? AND t = {TAG_VECTOR} AND rx IS NULL",
            (a,)).fetchone()[0] < MIN_VECTORS:
        return None     # too few vectors to repay loading the index: the exact list is faster
    return index.open()


def paths(db_path: str, a: int) -> tuple[str, str]:
    stem = f"{db_path}{sidecars.VECTOR_INDEX_INFIX}{a}"
    return stem + ".usearch", stem + ".json"


class VectorIndex:
    """The index of attribute ``a`` at ``basis``, brought up to date; ``candidates`` answers."""

    def __init__(self, conn, db_path: str, a: int, name: str, dims: int, basis: int, store_id: str):
        self.conn, self.a, self.name, self.dims, self.basis = conn, a, name, dims, basis
        self.store_id = store_id
        self.index_path, self.meta_path = paths(db_path, a)
        self.delta: list = []      # (fact id, entity, blob) asserted since the file's basis, still live
        self.index = None
        self.size = 0

    # -- opening ----------------------------------------------------------------------
    def open(self) -> "VectorIndex":
        meta = self._meta()
        if meta is None or not self._catch_up(meta["basis"]):
            self._build()
        return self

    def _meta(self) -> dict | None:
        raw = files.read_sidecar(self.meta_path, "vector index metadata", META_LIMIT)
        if raw is None:
            return None
        try:
            meta = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("store") != self.store_id \
                or meta.get("dims") != self.dims or not isinstance(meta.get("basis"), int) \
                or meta["basis"] > self.basis or meta.get("basis_event") != self._event_of(meta["basis"]):
            return None     # another store, another history, or a file of the future: build anew
        index = self._view(meta.get("bytes"))
        if index is None:
            return None
        self.index, self.size = index, len(index)
        return meta

    def _event_of(self, tx: int) -> str | None:
        row = self.conn.execute("SELECT hex(gid) FROM fgraph_ids WHERE id = ?", (tx,)).fetchone()
        return row[0] if row else None

    def _view(self, expected_bytes):
        """The index file memory-mapped through a descriptor opened without following links; anything
        but a regular file of the recorded size reads as no index."""
        usearch = _load_usearch()
        try:
            fd = os.open(self.index_path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                         | getattr(os, "O_CLOEXEC", 0))   # never through a link, never blocked by a FIFO
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not os.path.stat.S_ISREG(info.st_mode) or info.st_size != expected_bytes:
                return None
            # No key lookups: the list needs keys from a search, never a slot by key, and building
            # that table on every open was linear in the vectors (0.11 s of 0.15 at a million).
            index = usearch.Index(ndim=self.dims, metric="cos", dtype="f32", enable_key_lookups=False)
            index.view(f"/proc/self/fd/{fd}")
            return index
        except (RuntimeError, ValueError, OSError):
            return None
        finally:
            os.close(fd)

    def _catch_up(self, since: int) -> bool:
        """Read the events after the file's basis: False when the index must be rebuilt."""
        if since == self.basis:
            return True
        events = self.conn.execute("SELECT count(*) FROM fgraph_events WHERE tx > ? AND tx <= ?",
                                   (since, self.basis)).fetchone()[0]
        if events > REBUILD_EVENTS:
            return False
        for tx, data, event_hash in self.conn.execute(
                f"SELECT tx, {payload_bytes()}, event_hash FROM fgraph_events WHERE tx > ? AND tx <= ? ORDER BY tx",
                (since, self.basis)):
            text = verified_text(tx, data, event_hash)
            if text is None:
                return False     # a redacted stub: something was excised
            record = loads(text)
            if set(record) - EVENT_KEYS or any(item[1] == self.name for item in record.get("retracted", ())):
                return False     # an excision, or a value of this attribute retracted: forget it here too
        self.delta = self.conn.execute(
            "SELECT f.id, f.e, b.data FROM fgraph_facts AS f INDEXED BY fgraph_txin JOIN fgraph_blobs AS b "
            f"ON b.hash = f.v WHERE f.tx > ? AND f.tx <= ? AND f.a = ? AND f.t = {TAG_VECTOR} AND f.rx IS NULL "
            "ORDER BY f.id", (since, self.basis, self.a)).fetchall()
        return True

    def _build(self) -> None:
        usearch = _load_usearch()
        import numpy

        index = usearch.Index(ndim=self.dims, metric="cos", dtype="f32")
        cursor = self.conn.execute(
            "SELECT f.id, b.data FROM fgraph_facts AS f JOIN fgraph_blobs AS b ON b.hash = f.v "
            f"WHERE f.a = ? AND f.t = {TAG_VECTOR} AND f.rx IS NULL ORDER BY f.id", (self.a,))
        width = 4 * self.dims
        while True:
            fetched = list(itertools.islice(cursor, 65536))
            if not fetched:
                break
            rows = [row for row in fetched if len(row[1]) == width]   # other lengths: no dims fixed them
            if not rows:
                continue
            keys = numpy.fromiter((row[0] for row in rows), dtype=numpy.uint64, count=len(rows))
            matrix = numpy.frombuffer(b"".join(row[1] for row in rows), dtype="<f4").reshape(len(rows), -1)
            index.add(keys, matrix)
        self.index, self.size, self.delta = index, len(index), []
        self._save(index)

    def _save(self, index) -> None:
        """Index first, then the metadata naming its size: a torn pair reads as no index."""
        try:
            data = bytes(index.save())
            files.write_atomically(self.index_path, data, "vector index")
            meta = {"basis": self.basis, "basis_event": self._event_of(self.basis), "bytes": len(data),
                    "dims": self.dims, "format": FORMAT, "store": self.store_id, "vectors": len(index)}
            files.write_atomically(self.meta_path, orjson.dumps(meta, option=orjson.OPT_SORT_KEYS), "vector index metadata")
        except FgraphError:
            pass     # a read-only directory: the index serves this search from memory and is not kept

    # -- answering --------------------------------------------------------------------
    def candidates(self, query: tuple, wanted: int) -> tuple[list, bool]:
        """(rows of (fact id, entity, blob) to score exactly, whether vectors were left out)."""
        rows = list(self.delta)
        if self.size:
            import numpy

            count = min(wanted, self.size)
            found = self.index.search(numpy.asarray(query, dtype=numpy.float32), count)
            keys = [int(key) for key in found.keys]
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                rows += self.conn.execute(
                    "SELECT f.id, f.e, b.data FROM fgraph_facts AS f JOIN fgraph_blobs AS b ON b.hash = f.v "
                    f"WHERE f.id IN ({','.join('?' * len(chunk))}) AND f.a = ? AND f.rx IS NULL",
                    (*chunk, self.a)).fetchall()
            left_out = count < self.size
        else:
            left_out = False
        return sorted(rows), left_out
