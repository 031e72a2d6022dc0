"""How search results look (spec 13 §8): evidence facts with their transaction's provenance,
snippets, compact pulls, the 2 KiB string cap and the 1 MiB result cap."""

from __future__ import annotations

from fgraph.core.canonical import dumps_bytes
from fgraph.core.errors import damaged
from fgraph.core.values import TAG_VECTOR

STRING_CAP = 2048          # UTF-8 bytes a value or snippet may have in a result
RESULT_CAP = 1_048_576     # canonical bytes of a whole result
PULL_ATTRIBUTES, PULL_VALUES = 32, 32
ELLIPSIS = "…"


def cap_string(text: str) -> tuple[str, bool]:
    """``text`` or its longest whole-character prefix of at most 2,045 bytes plus an ellipsis."""
    encoded = text.encode("utf-8")
    if len(encoded) <= STRING_CAP:
        return text, False
    return encoded[:STRING_CAP - len(ELLIPSIS.encode())].decode("utf-8", "ignore") + ELLIPSIS, True


class Renderer:
    """Renders entities, facts and pulls at the current basis, caching names and provenance."""

    def __init__(self, reader):
        self.reader, self.conn, self.cat = reader, reader.conn, reader.cat
        self.provenance: dict = {}
        self.many: dict = {}

    def entity(self, e: int):
        return self.reader.local_ref(e)

    def fact(self, fact_id: int) -> dict:
        e, a, v, t, tx, rx = self.conn.execute("SELECT e, a, v, t, tx, rx FROM fgraph_facts WHERE id = ?",
                                               (fact_id,)).fetchone()
        # vector evidence names the vector's size, never its values
        shown = {"vector_dims": len(self.cat.blob(v)) // 4} if t == TAG_VECTOR else self.reader.value(v, t)
        return {"id": fact_id, "e": self.entity(e), "a": self.cat.name_of(a), "v": shown, "tx": tx, "rx": rx}

    def keyword_evidence(self, fact_id: int, snippet: str) -> dict:
        fact = self.fact(fact_id)
        fact["v"], cut = cap_string(fact["v"])
        if cut:
            fact["value_truncated"] = True
        fact.update(self.reader.tx_meta(fact["tx"], self.provenance))
        fact["snippet"], cut = cap_string(snippet)
        if cut:
            fact["snippet_truncated"] = True
        return fact

    def vector_evidence(self, fact_id: int) -> dict:
        fact = self.fact(fact_id)
        fact["value_truncated"] = True
        fact.update(self.reader.tx_meta(fact["tx"], self.provenance))
        return fact

    def pull(self, e: int) -> dict:
        """The first 32 attributes by name, the first 32 values of each many attribute, uncut."""
        attributes = [a for (a,) in self.conn.execute(
            "SELECT DISTINCT a FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? AND rx IS NULL", (e,))]
        names = [(self.cat.name_of(a), a) for a in attributes]
        if any(name is None for name, _ in names):  # an attribute is always a named identity
            raise damaged(f"an attribute of entity {e} has no name in the identity registry")
        named = sorted(names)[:PULL_ATTRIBUTES]
        out: dict = {}
        for name, a in named:
            many = self._is_many(a)
            rows = self.conn.execute(
                "SELECT v, t FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ? AND a = ? AND rx IS NULL "
                f"ORDER BY id {'ASC' if many else 'DESC'} LIMIT ?", (e, a, PULL_VALUES if many else 1)).fetchall()
            rendered = [self.reader.value(v, t) for v, t in rows]
            if not rendered:  # one index lists a live fact another cannot find
                raise damaged(f"the indexes of entity {e} disagree")
            out[name] = rendered if many else rendered[0]
        return out

    def _is_many(self, a: int) -> bool:
        return self.reader.is_many(a, self.many)


def trim_to_cap(result: dict) -> bool:
    """Shrink ``result`` in place until its canonical form fits 1 MiB: drop ``expanded``, then
    every ``matched``, then trailing hits. Returns whether anything was dropped."""
    if _size(result) <= RESULT_CAP:
        return False
    result["truncated"] = True
    result["expanded"] = []
    if _size(result) <= RESULT_CAP:
        return True
    for hit in result["hits"]:
        hit["matched"] = []
    hits = result["hits"]
    sizes = [len(dumps_bytes(hit)) for hit in hits]
    result["hits"] = []
    total = _size(result) + sum(sizes) + max(len(hits) - 1, 0)
    while hits and total > RESULT_CAP:
        total -= sizes.pop() + (1 if hits[1:] else 0)
        hits.pop()
    result["hits"] = hits
    return True


def _size(result: dict) -> int:
    return len(dumps_bytes(result))
