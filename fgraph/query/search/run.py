"""``search`` (spec 13 §2–§9): keyword and vector candidate lists fused by reciprocal rank,
the top ``k`` hits with their evidence and compact pulls, and ``expand`` levels of neighbours
reached through refs; all within the handle's work budget, in one read transaction at the
latest basis.
"""

from __future__ import annotations

from fgraph.core.errors import Unsupported
from fgraph.core.mappings import FrozenMapping
from fgraph.core.txn import read_transaction
from fgraph.core.values import TAG_REF
from fgraph.query.search import request as search_request
from fgraph.query.budget import WorkBudget
from fgraph.query.search.entities import EntityMatch, word_query
from fgraph.query.search.lists import Lists, Ranked, candidate_cap
from fgraph.query.search.render import Renderer, trim_to_cap

RRF_K = 60
MAX_EXPANDED = 100


class SearchResult(FrozenMapping):
    """A search's answer: ``basis_tx``, ``hits``, ``expanded``, ``truncated``, ``work_used``."""

    __slots__ = ()

    def __init__(self, basis_tx: int, hits: list, expanded: list, truncated: bool = False, work_used: int = 0):
        super().__init__({"basis_tx": basis_tx, "hits": hits, "expanded": expanded, "truncated": truncated,
                          "work_used": work_used})


def search(conn, open_reader, *, historical: bool, budget: int, options: dict) -> SearchResult:
    """``Db.search``: ``options`` are its keyword arguments as given; ``open_reader()`` makes the
    reader of the latest basis, inside the search's read transaction."""
    search_request.check_options(options)
    if historical:
        raise Unsupported("search reads the current facts only, not a historical view",
                          "search the database itself, or ask q on the view")
    request = search_request.parse(**options)
    with read_transaction(conn):
        work = WorkBudget(budget, "search", "narrow the search (fewer filters, a smaller expand)")
        return _Search(open_reader(), request, work).run()


class _Search:
    """One search: resolve what it names, read the lists, fuse, expand, render, trim."""

    def __init__(self, reader, request, budget: WorkBudget):
        self.reader, self.request, self.budget = reader, request, budget
        self.lists = Lists(reader, budget.charge)
        self.render = Renderer(reader)
        self.truncated = False

    def run(self) -> SearchResult:
        request, lists = self.request, self.lists
        # resolved in the published runtime's order, so a request with several faults names the same one
        filter_keys = lists.filter_keys(request.filters)
        text_ids = lists.text_attribute_ids(request.text_attributes) if request.words is not None else ()
        vector_a = query = None
        if request.vector is not None:
            query = search_request.query_vector(request.vector)
            vector_a = lists.vector_attribute(request.vector_attribute, query)
        allowed = lists.allowed(filter_keys) if filter_keys else None
        cap = candidate_cap(request.k)
        keyword = vector = entities = None
        if request.words is not None and request.match != "entity":
            keyword = lists.keyword(request.fts_query(), text_ids, allowed, cap)
        if vector_a is not None:
            vector = lists.vector(vector_a, query, allowed, cap)
        self.truncated = any(r is not None and r.truncated for r in (keyword, vector))
        # fill with a vector is hybrid recall: keyword, entity-level and vector lists in one fused
        # ranking (decision S2), since a vector list alone always fills k; when the published rule's
        # words already find k hits the answer is the published fusion, byte for byte (as fill is)
        hybrid = (request.match == "fill" and vector is not None and request.words is not None
                  and (keyword is None or len(keyword.entries) < request.k))
        hits = [] if request.match == "entity" else self._fuse(keyword, vector)[:request.k]
        # fill looks further only when the published rule left room: a full answer is its answer
        if request.words is not None and (request.match == "entity" or hybrid or request.match == "fill" and
                                          len(hits) < request.k):
            entities = EntityMatch(self.reader, self.budget.charge, allowed=allowed,
                                   attribute_ids=text_ids).rank(request.words, cap)
        found = {e: candidate for e, _, candidate in entities or ()}
        if request.match == "entity" or hybrid:
            hits = self._fuse(keyword if hybrid else None, Ranked([(e, None) for e in found]), vector)[:request.k]
        rendered = [self._hit(e, score, keyword, vector, found.get(e) if request.match == "entity" or hybrid else None)
                    for e, score in hits]
        if entities and request.match == "fill" and not hybrid:
            shown = {e for e, _ in hits}
            extra = [(e, score) for e, score, _ in entities if e not in shown][:request.k - len(hits)]
            hits += extra
            rendered += [self._hit(e, score, None, None, found[e]) for e, score in extra]
        expanded = self._expand([e for e, _ in hits], request.expand)
        result = {"basis_tx": self.reader.basis, "hits": rendered,
                  "expanded": expanded, "truncated": self.truncated, "work_used": self.budget.used}
        trim_to_cap(result)
        return SearchResult(**result)

    def _fuse(self, *lists) -> list:
        """(entity id, score) by reciprocal-rank score, equal scores by the rendered entity as text."""
        scores: dict = {}
        for ranked in lists:
            if ranked is None:
                continue
            for position, (e, _) in enumerate(ranked.entries, start=1):
                scores[e] = scores.get(e, 0.0) + 1.0 / (RRF_K + position)
        return sorted(scores.items(), key=lambda item: (-item[1], str(self.render.entity(item[0]))))

    def _hit(self, e: int, score: float, keyword, vector, candidate=None) -> dict:
        """A hit as spec 13 §8 renders it; one found by entity-level matching (and not by the
        published rule) also says so: ``how`` is ``entity`` and ``words`` how each word matched."""
        if candidate is not None and (keyword is None or keyword.evidence(e) is None):
            return self._entity_hit(e, score, vector, candidate)
        matched = []
        if keyword is not None:
            evidence = keyword.evidence(e)
            if evidence is not None:
                snippet = self.lists.snippet(self.request.fts_query(), evidence)
                matched.append(self.render.keyword_evidence(evidence, snippet))
        if vector is not None:
            evidence = vector.evidence(e)
            if evidence is not None:
                matched.append(self.render.vector_evidence(evidence))
        return {"entity": self.render.entity(e), "score": score, "matched": matched, "pull": self.render.pull(e)}

    def _entity_hit(self, e: int, score: float, vector, candidate) -> dict:
        matched, shown = [], set()
        for word, fact_id in candidate.evidence.items():
            if fact_id in shown:
                continue
            shown.add(fact_id)
            snippet = self.lists.snippet(candidate.queries.get(word) or word_query(word), fact_id)
            matched.append(self.render.keyword_evidence(fact_id, snippet))
        if vector is not None and vector.evidence(e) is not None:
            matched.append(self.render.vector_evidence(vector.evidence(e)))
        return {"entity": self.render.entity(e), "score": score, "matched": matched, "pull": self.render.pull(e),
                "how": "entity", "words": dict(sorted(candidate.how.items()))}

    def _expand(self, hits: list, levels: int) -> list:
        """Breadth-first through live refs in both directions, in discovery order, up to 100 entities."""
        known = set(hits)
        expanded: list = []
        frontier = [(e, []) for e in hits]
        conn = self.reader.conn
        for _ in range(levels):
            discovered = []
            for node, via in frontier:
                cursor = conn.execute(
                    f"SELECT id, e, a, v, tx FROM fgraph_facts WHERE e = ? AND t = {TAG_REF} AND rx IS NULL "
                    f"UNION SELECT id, e, a, v, tx FROM fgraph_facts WHERE v = ? AND t = {TAG_REF} AND rx IS NULL "
                    "ORDER BY id", (node, node))
                for fact_id, e, a, v, tx in cursor:
                    self.budget.charge(1)
                    other = v if e == node else e
                    if other in known:
                        continue
                    known.add(other)
                    path = via + [self._ref_fact(fact_id, e, a, v, tx)]
                    discovered.append((other, path))
                    expanded.append({"entity": self.render.entity(other), "via": path,
                                     "pull": self.render.pull(other)})
                    if len(expanded) == MAX_EXPANDED:
                        self.truncated = True
                        return expanded
            frontier = discovered
        return expanded

    def _ref_fact(self, fact_id, e, a, v, tx) -> dict:
        return {"id": fact_id, "e": self.render.entity(e), "a": self.reader.cat.name_of(a),
                "v": {"ref": self.render.entity(v)}, "tx": tx, "rx": None}
