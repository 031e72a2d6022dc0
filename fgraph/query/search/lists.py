"""The candidate lists of a search (spec 13 §3–§5): filters, the keyword list over the FTS5
index and the exact vector list, each charging its work units as it reads.

A list is the eligible entities in rank order, each with its evidence fact, capped at
``C = min(500, max(50, 5·k))``; it says whether a (C+1)-th eligible entity exists.

Vectors are scored with numpy in binary64 over the stored float32 values. The published
runtime computes ``dot / (sqrt(q·q) * sqrt(v·v))`` with accurately rounded sums; numpy's sums
may differ from those in the last bits, which could only reorder near-ties. So every run of
scores closer than numpy's error bound is scored again with ``math.fsum`` and re-sorted:
ties, and only ties, then break by fact id as the published runtime's do.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from fgraph.core import values
from fgraph.core.values import TYPE_TAGS
from fgraph.core.errors import NotFound, ValueTypeError
from fgraph.core.genesis import A_DIMS, A_TYPE, SYSTEM_MAX
from fgraph.core.values import RefWire, TAG_VECTOR
from fgraph.query.search import vector_index

CHUNK = 4096  # vectors scored per numpy call: memory stays flat however many are stored

# Imported by the first vector search, not at start-up: every other command would pay its ~70 ms.
numpy = None


def _load_numpy() -> None:
    global numpy
    if numpy is None:
        import numpy as module
        numpy = module


def candidate_cap(k: int) -> int:
    return min(500, max(50, 5 * k))


@dataclass
class Ranked:
    """One list: ``entries`` are (entity id, evidence fact id) best first."""

    entries: list = field(default_factory=list)
    truncated: bool = False
    _by_entity: dict | None = None

    def evidence(self, e: int):
        """The evidence fact of entity ``e``, None if the list does not hold it."""
        if self._by_entity is None:
            self._by_entity = dict(self.entries)
        return self._by_entity.get(e)


class Lists:
    """The lists of one request at the current basis; ``charge(n)`` spends the work budget."""

    def __init__(self, reader, charge):
        self.reader, self.conn, self.cat, self.charge = reader, reader.conn, reader.cat, charge

    # -- resolution (errors before anything is read) -------------------------------
    def vector_attribute(self, name: str, vector: tuple) -> int:
        a = self.cat.id_by_name(name)
        if a is None:
            raise NotFound(f"search attribute {name!r} was not found", "declare and populate it first")
        if self.reader.one_value(a, A_TYPE) != "vector":
            raise ValueTypeError(f"search attribute {name!r} is not vector-typed",
                                 "search an attribute declared with type vector")
        dims = self.reader.one_value(a, A_DIMS)
        if dims is not None and dims != len(vector):
            raise ValueTypeError(f"search vector has {len(vector)} dimensions, but {name!r} holds {dims}",
                                 "embed the query with the model used for that attribute")
        return a

    def filter_keys(self, filters: tuple) -> list:
        """Each filter as (attribute id, tag, stored value); None for an unknown attribute (matches nothing)."""
        keys = []
        for name, raw in filters:
            a = self.cat.id_by_name(name)
            if a is None:
                keys.append(None)
                continue
            wire = values.from_wire(raw)
            if isinstance(wire, RefWire):
                wire = values.Value(values.TAG_REF, self.reader.resolve(wire.selector), None)
            declared = self.reader.one_value(a, A_TYPE)
            if declared in TYPE_TAGS and wire.t not in TYPE_TAGS[declared]:
                raise ValueTypeError(f"filter value {raw!r} is {values.logical_name(wire.t)}, "
                                     f"but {name!r} holds {declared}", f"filter {name!r} by a {declared} value")
            keys.append((a, wire.t, wire.v))
        return keys

    def text_attribute_ids(self, names: tuple) -> tuple:
        ids = []
        for name in names:
            a = self.cat.id_by_name(name)
            if a is None:
                raise NotFound(f"text search attribute {name!r} was not found", "check the attribute name")
            ids.append(a)
        return tuple(ids)

    # -- filters --------------------------------------------------------------
    def allowed(self, keys: list):
        """The entities holding every filter's value (None: no filters). Filters run in order, each
        costing 1 unit per live fact holding its value, until none is left to keep."""
        allowed = None
        for key in keys:
            found = set()
            if key is not None:
                rows = self.conn.execute("SELECT e FROM fgraph_facts WHERE a = ? AND t = ? AND v = ? "
                                         "AND rx IS NULL", key).fetchall()
                self.charge(len(rows))
                found = {e for (e,) in rows}
            allowed = found if allowed is None else allowed & found
            if not allowed:
                break
        return allowed

    # -- keyword list -------------------------------------------------------------
    def keyword(self, fts_query: str, attribute_ids: tuple, allowed, cap: int) -> Ranked:
        ranked = Ranked()
        if not fts_query:
            return ranked
        ranking = self.conn.execute("SELECT rowid FROM fgraph_fts WHERE fgraph_fts MATCH ? ORDER BY rank, rowid",
                                    (fts_query,))
        _collect(self._facts_in_order(ranking, attribute_ids), ranked, allowed, cap, self.charge)
        return ranked

    def _facts_in_order(self, ranking, attribute_ids: tuple):
        """(fact id, entity) of the ranked FTS rows, in their order, that are application facts
        (of ``attribute_ids`` when given). The facts are read a chunk at a time as the list is
        consumed, not joined to every match: a common word matches a fifth of a large store's
        notes and the list stops after ``cap`` entities (issue 34)."""
        size = 64
        while chunk := [rowid for (rowid,) in itertools.islice(ranking, size)]:
            found = {fact_id: (e, a) for fact_id, e, a in self.conn.execute(
                f"SELECT id, e, a FROM fgraph_facts WHERE id IN ({','.join('?' * len(chunk))})", chunk)}
            for fact_id in chunk:
                row = found.get(fact_id)
                if row is not None and row[1] > SYSTEM_MAX and (not attribute_ids or row[1] in attribute_ids):
                    yield fact_id, row[0]
            size = min(size * 2, 512)

    def snippet(self, fts_query: str, fact_id: int) -> str:
        row = self.conn.execute("SELECT snippet(fgraph_fts, 0, '[', ']', '…', 12) FROM fgraph_fts "
                                "WHERE fgraph_fts MATCH ? AND rowid = ?", (fts_query, fact_id)).fetchone()
        return row[0] if row else ""

    # -- vector list ------------------------------------------------------------
    def vector(self, a: int, query: tuple, allowed, cap: int) -> Ranked:
        index = vector_index.for_search(self.conn, a, self.cat.name_of(a), self.reader.one_value(a, A_DIMS),
                                        self.reader.basis)
        if index is not None:
            ranked = self._indexed(index, query, allowed, cap)
            if ranked is not None:
                return ranked
        ranked = Ranked()
        scorer = _Scorer(self.conn, query)
        cursor = self.conn.execute(
            "SELECT f.id, f.e, b.data FROM fgraph_facts AS f JOIN fgraph_blobs AS b ON b.hash = f.v "
            f"WHERE f.a = ? AND f.t = {TAG_VECTOR} AND f.rx IS NULL ORDER BY f.id", (a,))
        while True:
            rows = list(itertools.islice(cursor, CHUNK))
            if not rows:
                break
            self.charge(len(rows))
            scorer.add(rows)
        _collect(scorer.ranked(), ranked, allowed, cap, lambda n: None)
        return ranked

    def _indexed(self, index, query: tuple, allowed, cap: int) -> Ranked | None:
        """The list from the index's candidates, scored exactly, widened while they hold fewer
        eligible entities than the cap; None past ``WIDEST`` candidates per entity of the cap."""
        wanted = vector_index.CANDIDATES * cap
        while True:
            rows, left_out = index.candidates(query, wanted)
            self.charge(len(rows))
            scorer = _Scorer(self.conn, query)
            scorer.add(rows)
            ranked = Ranked()
            _collect(scorer.ranked(), ranked, allowed, cap, lambda n: None)
            if len(ranked.entries) == cap or not left_out:
                ranked.truncated = ranked.truncated or left_out
                return ranked
            if wanted >= vector_index.WIDEST * cap:
                return None     # too few eligible entities near the query (a filter): the exact list decides
            wanted *= 4


def _collect(rows, ranked: Ranked, allowed, cap: int, charge) -> None:
    """Entities in order of their first row, filtered, until a (cap+1)-th proves truncation."""
    seen: set = set()
    for fact_id, e in rows:
        charge(1)
        if e in seen or (allowed is not None and e not in allowed):
            continue
        if len(seen) == cap:
            ranked.truncated = True
            return
        seen.add(e)
        ranked.entries.append((e, fact_id))


class _Scorer:
    """Cosine similarity of every stored vector to the query; zero vectors are never candidates.

    Holds three numbers per stored vector (fact id, entity, score), never the vectors.
    """

    def __init__(self, conn, query: tuple):
        self.conn, self.query = conn, query
        _load_numpy()
        self.q = numpy.asarray(query, dtype=numpy.float64)
        self.q_norm = math.sqrt(math.fsum(x * x for x in query))
        self.ids, self.entities, self.scores = [], [], []
        # numpy's error on one cosine stays below (dims + 2) units in the last place of 1.0
        self.tolerance = 4 * (len(query) + 8) * 2.0 ** -52

    def add(self, rows: list) -> None:
        width = 4 * len(self.query)
        odd = [r for r in rows if len(r[2]) != width]
        if odd:  # stored vectors of another length (no dims fixed them): scored one by one
            rows = [r for r in rows if len(r[2]) == width]
            for fact_id, e, blob in odd:
                score = self._exact(blob)
                if score is not None:
                    self._append([fact_id], [e], [score])
        if not rows:
            return
        matrix = numpy.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), -1)
        matrix = matrix.astype(numpy.float64)
        norms = numpy.sqrt(numpy.einsum("ij,ij->i", matrix, matrix))
        keep = norms != 0.0
        with numpy.errstate(divide="ignore", invalid="ignore"):
            cosines = (matrix @ self.q) / (norms * self.q_norm)
        ids = numpy.fromiter((r[0] for r in rows), dtype=numpy.int64, count=len(rows))
        entities = numpy.fromiter((r[1] for r in rows), dtype=numpy.int64, count=len(rows))
        self._append(ids[keep], entities[keep], cosines[keep])

    def _append(self, ids, entities, scores) -> None:
        self.ids.append(numpy.asarray(ids, dtype=numpy.int64))
        self.entities.append(numpy.asarray(entities, dtype=numpy.int64))
        self.scores.append(numpy.asarray(scores, dtype=numpy.float64))

    def _exact(self, blob: bytes):
        """The published formula with correctly rounded sums (``zip`` pairs vectors of unequal length)."""
        stored = values.render_vector(blob)
        squares = math.fsum(x * x for x in stored)
        if squares == 0.0:
            return None
        dot = math.fsum(x * y for x, y in zip(self.query, stored))
        return dot / (self.q_norm * math.sqrt(squares))

    def _exact_of_fact(self, fact_id: int, cache: dict) -> float:
        (blob,) = self.conn.execute("SELECT b.data FROM fgraph_facts AS f JOIN fgraph_blobs AS b ON b.hash = f.v "
                                    "WHERE f.id = ?", (fact_id,)).fetchone()
        if blob not in cache:
            cache[blob] = self._exact(blob)
        return cache[blob]

    def ranked(self):
        """(fact id, entity) by similarity, ties by fact id; runs of near-ties are settled exactly."""
        if not self.ids:
            return
        ids, entities = numpy.concatenate(self.ids), numpy.concatenate(self.entities)
        scores = numpy.concatenate(self.scores)
        order = numpy.lexsort((ids, -scores))
        ids, entities, scores = ids[order], entities[order], scores[order]
        # a run ends where the next score is clearly lower; only runs of two or more need a look
        ends = numpy.flatnonzero(numpy.diff(scores) < -self.tolerance).tolist() + [len(order) - 1]
        start = 0
        for end in ends:
            run = list(zip(ids[start:end + 1].tolist(), entities[start:end + 1].tolist()))
            if len(run) > 1:
                cache: dict = {}
                run.sort(key=lambda pair: (-self._exact_of_fact(pair[0], cache), pair[0]))
            yield from run
            start = end + 1
