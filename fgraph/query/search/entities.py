"""Entity-level matching for ``search(match="entity" | "fill")`` and MCP ``recall`` (decision
S1, docs/search.md): an entity matches when its facts *together* hold the words, or the names
of the entities it refers to do, ranked by BM25 over the FTS5 index the format already keeps.

The published rule (spec 13 §4) asks for every word in one fact; a question such as "babbage
tea" or "who maintains billing" then finds nothing. Here each word of the question is its own
FTS5 query: the exact word or its stem relatives (``words.py``: a stem of six letters or more
as a prefix, a shorter one its inflections only), so a fact holding the exact word ranks above
one holding only a relative; a word that finds nothing at all is replaced by the store's
nearest words (``typos.py``). What each word is worth to an entity is the best of

- a fact of its own holding the word: the fact's BM25 score (FTS5 ``bm25()``);
- a name fact (``*/name``, ``*/title``) of an entity it refers to: half of that;
- an attribute of its own whose name holds the word (``rel/maintains``, ``decision/…``): a
  third of the question's typical word score; only entities already found by a text match
  get it, so structure ranks matches and never makes one;
- for an entity at the other end of a ref whose attribute's local name names a word, from one
  of the ``HOPS_FROM`` best entities one of whose own facts matched ("who maintains billing": ``billing`` →
  ``service/maintainers`` → a person): that word, and half of what the first one's facts matched.

An entity's score is the sum over the words, times the share of the question's words it
matched, so an entity holding every word outranks one holding a rare word only. Function words
("which", "over", "der") are dropped unless the question is nothing else; a question asking for
the newest ("recently", "current") ranks newer entities higher (decision S2). Reads are bounded: at most
``ROWS_PER_WORD`` facts per word, ``REFERRERS`` referrers per name and ``CANDIDATES`` entities
scored; each row read charges the work budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fgraph.core.genesis import A_AT, A_IMPORTED_AT, SYSTEM_MAX
from fgraph.core.values import TAG_REF
from fgraph.query.search import typos
from fgraph.query.search.words import Word, asks_recency, question_words, stem, word_query

__all__ = ["Candidate", "EntityMatch", "question_words", "word_query"]

ROWS_PER_WORD = 1000
REFERRERS = 200
CANDIDATES = 200
HOPS_FROM = 20
REFERENCE_SHARE, ATTRIBUTE_SHARE = 0.5, 1 / 3
NAME_PARTS = ("name", "title")


@dataclass
class Candidate:
    """What the question's words found for one entity: per word, its best score and evidence."""

    scores: dict = field(default_factory=dict)   # word text -> best score
    how: dict = field(default_factory=dict)      # word text -> "fact" | "reference" | "attribute"
    evidence: dict = field(default_factory=dict)  # word text -> fact id (fact and reference)
    queries: dict = field(default_factory=dict)   # word text -> the FTS5 query its evidence matched

    def credit(self, word: str, score: float, how: str, fact_id=None, query: str | None = None) -> None:
        if score > self.scores.get(word, 0.0):
            self.scores[word], self.how[word] = score, how
            if fact_id is not None:
                self.evidence[word] = fact_id
            else:
                self.evidence.pop(word, None)
            if query is not None:
                self.queries[word] = query

    def total(self, words: int) -> float:
        return sum(self.scores.values()) * len(self.scores) / words


class EntityMatch:
    """The entity-level ranking of one question at the reader's basis."""

    def __init__(self, reader, charge, *, allowed=None, attribute_ids: tuple = ()):
        self.reader, self.conn, self.cat, self.charge = reader, reader.conn, reader.cat, charge
        self.allowed, self.attribute_ids = allowed, attribute_ids

    def rank(self, words: tuple, limit: int) -> list[tuple[int, float, Candidate]]:
        """(entity id, score, candidate) best first, at most ``limit``; ties by entity id."""
        question = question_words(words)
        if not question:
            return []
        found: dict[int, Candidate] = {}
        best = []
        for word in question:
            top = self._facts(word, found)
            for correction in ([] if top else typos.corrections(self.conn, word.text, self.charge)):
                # a key word that found nothing: the store's nearest words stand in for it (typos.py)
                top = max(top, self._facts(Word(correction, stem(correction)), found, key=word.text))
            if top:
                best.append(top)
        typical = sum(best) / len(best) if best else 1.0
        ranked = sorted(found.items(), key=lambda item: (-item[1].total(len(question)), item[0]))[:CANDIDATES]
        for e, candidate in ranked:
            self._attributes(e, candidate, question, typical * ATTRIBUTE_SHARE)
        reached: dict[int, Candidate] = {}
        for e, candidate in [item for item in ranked if "fact" in item[1].how.values()][:HOPS_FROM]:
            self._hop(e, candidate, question, typical * ATTRIBUTE_SHARE, found, reached)
        pool = dict(ranked)
        pool.update(reached)
        scored = sorted(((e, c.total(len(question)), c) for e, c in pool.items()), key=lambda item: (-item[1], item[0]))
        if asks_recency(words):
            scored = self._newest_first(scored[:CANDIDATES])
        return scored[:limit]

    def _newest_first(self, scored: list) -> list:
        """The question asked for the newest ("recently", "current"): the entities holding the most
        of its words come first, and among them the one whose newest live fact is newest by its
        source time (as ``context`` places records, decision C4: the transaction's
        ``fgraph/imported-at``, the record's own time, else its ``fgraph/at``); the score stays the
        words' score."""
        newest = {}
        for e, _, _ in scored:
            row = self.conn.execute(
                "SELECT max(coalesce("
                f"(SELECT v FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = f.tx AND a = {A_IMPORTED_AT} LIMIT 1), "
                f"(SELECT v FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = f.tx AND a = {A_AT} LIMIT 1))) "
                f"FROM fgraph_facts AS f WHERE f.e = ? AND f.rx IS NULL AND f.a > {SYSTEM_MAX}", (e,)).fetchone()
            self.charge(1)
            newest[e] = row[0] or 0
        return sorted(scored, key=lambda item: (-len(item[2].scores), -newest[item[0]], -item[0]))

    def _eligible(self, e: int) -> bool:
        return self.allowed is None or e in self.allowed

    def _facts(self, word: Word, found: dict, key: str | None = None) -> float:
        """Credit the entities holding ``word`` and those referring to them by name, under ``key``
        (the question's word, when ``word`` stands in for it); the best score."""
        key = word.text if key is None else key
        query = word.fts_query()
        only = f" AND f.a IN ({','.join('?' * len(self.attribute_ids))})" if self.attribute_ids else ""
        rows = self.conn.execute(
            "SELECT f.id, f.e, f.a, -bm25(fgraph_fts) AS score FROM fgraph_fts "
            "JOIN fgraph_facts AS f ON f.id = fgraph_fts.rowid "
            f"WHERE fgraph_fts MATCH ? AND f.a > {SYSTEM_MAX} AND f.rx IS NULL{only} "
            "ORDER BY score DESC, f.id LIMIT ?", (query, *self.attribute_ids, ROWS_PER_WORD)).fetchall()
        self.charge(len(rows))
        top = 0.0
        for fact_id, e, a, score in rows:
            top = max(top, score)
            if self._eligible(e):
                found.setdefault(e, Candidate()).credit(key, score, "fact", fact_id, query)
            if self._is_name(a):
                self._referrers(e, key, score * REFERENCE_SHARE, fact_id, found, query)
        return top

    def _is_name(self, a: int) -> bool:
        name = self.cat.name_of(a) or ""
        return name.rsplit("/", 1)[-1] in NAME_PARTS

    def _referrers(self, target: int, word: str, score: float, fact_id: int, found: dict, query: str) -> None:
        rows = self.conn.execute(
            f"SELECT e FROM fgraph_facts INDEXED BY fgraph_vaet WHERE v = ? AND rx IS NULL AND t = {TAG_REF} "
            f"AND a > {SYSTEM_MAX} LIMIT ?", (target, REFERRERS)).fetchall()
        self.charge(len(rows))
        for (e,) in rows:
            if e != target and self._eligible(e):
                found.setdefault(e, Candidate()).credit(word, score, "reference", fact_id, query)

    def _hop(self, e: int, candidate: Candidate, question: list, score: float, found: dict, reached: dict) -> None:
        """Along a ref of ``e`` whose attribute names a word ("who maintains billing" through
        ``service/maintainers``, "what does fgraph depend on" through ``rel/depends_on``), the
        entity at the other end: it gets that word, and half of what ``e``'s own facts matched."""
        rows = self.conn.execute(
            f"SELECT a, v FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? AND rx IS NULL AND t = {TAG_REF} "
            f"AND a > {SYSTEM_MAX} LIMIT ?", (e, REFERRERS)).fetchall()
        rows += self.conn.execute(
            f"SELECT a, e FROM fgraph_facts INDEXED BY fgraph_vaet WHERE v = ? AND rx IS NULL AND t = {TAG_REF} "
            f"AND a > {SYSTEM_MAX} LIMIT ?", (e, REFERRERS)).fetchall()
        self.charge(len(rows))
        for a, other in rows:
            named = [w for w in question if w.names(self.cat.name_of(a) or "", relation=True)]
            if not named or other == e or not self._eligible(other):
                continue
            target = reached.get(other) or found.get(other) or Candidate()
            reached[other] = target
            for word in named:
                target.credit(word.text, score, "attribute")
            for word, how in candidate.how.items():
                if how == "fact" and word not in {w.text for w in named}:
                    target.credit(word, candidate.scores[word] * REFERENCE_SHARE, "reference",
                                  candidate.evidence.get(word), candidate.queries.get(word))

    def _attributes(self, e: int, candidate: Candidate, question: list, score: float) -> None:
        names = [self.cat.name_of(a) or "" for (a,) in self.conn.execute(
            "SELECT DISTINCT a FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? AND rx IS NULL "
            f"AND a > {SYSTEM_MAX}", (e,))]
        self.charge(len(names))
        for word in question:
            if word.text not in candidate.scores and any(word.names(name) for name in names):
                candidate.credit(word.text, score, "attribute")
