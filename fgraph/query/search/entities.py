"""Entity-level matching for ``search(match="entity" | "fill")`` and MCP ``recall`` (decision
S1, docs/search.md): an entity matches when its facts *together* hold the words, or the names
of the entities it refers to do, ranked by BM25 over the FTS5 index the format already keeps.

The published rule (spec 13 §4) asks for every word in one fact; a question such as "babbage
tea" or "who maintains billing" then finds nothing. Here each word of the question is its own
FTS5 query, ``(word OR stem*)``: the exact word, or any word sharing its Snowball stem as a
prefix (``verification`` → ``verif*`` finds "verified"), so a fact holding the exact word ranks
above one holding only a relative. What each word is worth to an entity is the best of

- a fact of its own holding the word: the fact's BM25 score (FTS5 ``bm25()``);
- a name fact (``*/name``, ``*/title``) of an entity it refers to: half of that;
- an attribute of its own whose name holds the word (``rel/maintains``, ``decision/…``): a
  third of the question's typical word score; only entities already found by a text match
  get it, so structure ranks matches and never makes one;
- for an entity at the other end of a ref whose attribute's local name names a word, from one
  of the ``HOPS_FROM`` best entities one of whose own facts matched ("who maintains billing": ``billing`` →
  ``service/maintainers`` → a person): that word, and half of what the first one's facts matched.

An entity's score is the sum over the words, times the share of the question's words it
matched, so an entity holding every word outranks one holding a rare word only. Words such as
"which" or "the" are dropped unless the question is nothing else. Reads are bounded: at most
``ROWS_PER_WORD`` facts per word, ``REFERRERS`` referrers per name and ``CANDIDATES`` entities
scored; each row read charges the work budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fgraph.core.genesis import SYSTEM_MAX
from fgraph.core.values import TAG_REF

ROWS_PER_WORD = 1000
REFERRERS = 200
CANDIDATES = 200
HOPS_FROM = 20
REFERENCE_SHARE, ATTRIBUTE_SHARE = 0.5, 1 / 3
MIN_STEM = 3
WORD = re.compile(r"\w+")
NAME_PARTS = ("name", "title")
# function words of English questions: they carry no subject, and their stems match everything
STOPWORDS = frozenset("""
a about an and any are as at be been by can could did do does for from had has have how i in is it its
me my of on or our should that the their them there these they this those to was we were what when where
which who whom whose why will with would you your
""".split())

_stemmer = None


def _stem(word: str) -> str:
    global _stemmer
    if _stemmer is None:
        import snowballstemmer  # imported by the first entity search, not at start-up
        _stemmer = snowballstemmer.stemmer("english")
    return _stemmer.stemWord(word)


@dataclass(frozen=True)
class Word:
    """One word of the question: as typed (lower case) and its stem."""

    text: str
    stem: str

    def fts_query(self) -> str:
        exact = f'"{self.text}"'
        if len(self.stem) < MIN_STEM or self.stem == self.text and len(self.text) < MIN_STEM + 1:
            return exact
        return f'{exact} OR "{self.stem}"*'

    def names(self, attribute_name: str, *, relation: bool = False) -> bool:
        """Whether a part of an attribute's name is this word or a relative of it; for a
        ``relation``, a part of its local name only (``maintainers`` of ``service/maintainers``)."""
        if relation:
            attribute_name = attribute_name.rsplit("/", 1)[-1]
        return any(part == self.text or _stem(part).startswith(self.stem)
                   for part in re.split(r"[/._-]+", attribute_name) if part)


def word_query(text: str) -> str:
    """The FTS5 query of one question word, as ``EntityMatch`` looked it up."""
    return Word(text, _stem(text)).fts_query()


def question_words(words: tuple) -> list[Word]:
    """The words to look for: lower case, deduplicated, function words dropped unless nothing else is left."""
    lowered = list(dict.fromkeys(w.lower() for w in words if w))
    kept = [w for w in lowered if w not in STOPWORDS] or lowered
    return [Word(w, _stem(w)) for w in kept]


@dataclass
class Candidate:
    """What the question's words found for one entity: per word, its best score and evidence."""

    scores: dict = field(default_factory=dict)   # word text -> best score
    how: dict = field(default_factory=dict)      # word text -> "fact" | "reference" | "attribute"
    evidence: dict = field(default_factory=dict)  # word text -> fact id (fact and reference)

    def credit(self, word: str, score: float, how: str, fact_id=None) -> None:
        if score > self.scores.get(word, 0.0):
            self.scores[word], self.how[word] = score, how
            if fact_id is not None:
                self.evidence[word] = fact_id
            else:
                self.evidence.pop(word, None)

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
        return scored[:limit]

    def _eligible(self, e: int) -> bool:
        return self.allowed is None or e in self.allowed

    def _facts(self, word: Word, found: dict) -> float:
        """Credit the entities holding ``word`` and those referring to them by name; the best score."""
        only = f" AND f.a IN ({','.join('?' * len(self.attribute_ids))})" if self.attribute_ids else ""
        rows = self.conn.execute(
            "SELECT f.id, f.e, f.a, -bm25(fgraph_fts) AS score FROM fgraph_fts "
            "JOIN fgraph_facts AS f ON f.id = fgraph_fts.rowid "
            f"WHERE fgraph_fts MATCH ? AND f.a > {SYSTEM_MAX} AND f.rx IS NULL{only} "
            "ORDER BY score DESC, f.id LIMIT ?", (word.fts_query(), *self.attribute_ids, ROWS_PER_WORD)).fetchall()
        self.charge(len(rows))
        top = 0.0
        for fact_id, e, a, score in rows:
            top = max(top, score)
            if self._eligible(e):
                found.setdefault(e, Candidate()).credit(word.text, score, "fact", fact_id)
            if self._is_name(a):
                self._referrers(e, word.text, score * REFERENCE_SHARE, fact_id, found)
        return top

    def _is_name(self, a: int) -> bool:
        name = self.cat.name_of(a) or ""
        return name.rsplit("/", 1)[-1] in NAME_PARTS

    def _referrers(self, target: int, word: str, score: float, fact_id: int, found: dict) -> None:
        rows = self.conn.execute(
            f"SELECT e FROM fgraph_facts INDEXED BY fgraph_vaet WHERE v = ? AND rx IS NULL AND t = {TAG_REF} "
            f"AND a > {SYSTEM_MAX} LIMIT ?", (target, REFERRERS)).fetchall()
        self.charge(len(rows))
        for (e,) in rows:
            if e != target and self._eligible(e):
                found.setdefault(e, Candidate()).credit(word, score, "reference", fact_id)

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
                                  candidate.evidence.get(word))

    def _attributes(self, e: int, candidate: Candidate, question: list, score: float) -> None:
        names = [self.cat.name_of(a) or "" for (a,) in self.conn.execute(
            "SELECT DISTINCT a FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? AND rx IS NULL "
            f"AND a > {SYSTEM_MAX}", (e,))]
        self.charge(len(names))
        for word in question:
            if word.text not in candidate.scores and any(word.names(name) for name in names):
                candidate.credit(word.text, score, "attribute")
