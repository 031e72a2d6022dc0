"""Typo tolerance for entity-level matching (decision S2, docs/search.md): a question word that
found no fact at all is compared with the words the store's own text holds, and the nearest
ones stand in for it ("reddis" → "redis", "tenacty" → "tenacity", "lindqvst" → "lindqvist").

It runs only when the exact word (with its stem relatives) found nothing, so a question whose
words all occur costs nothing more. The store's words are the FTS5 index's vocabulary, read
through an ``fts5vocab`` table in the connection's ``temp`` schema (the file is not changed). The
read is bounded: words of ``MIN_WORD`` letters or more, vocabulary words with the same first
letter and a length within ``LENGTH_SLACK``, at most ``SCANNED`` of them, each charged to the
work budget; a candidate must be at least ``CUTOFF`` similar (``difflib`` ratio, the matcher
behind ``get``'s suggestions) and at most ``CORRECTIONS`` are kept, most similar first, then the
most frequent, a second one only if within ``NEAR_BEST`` of the first. A typo in the first letter is not corrected.
"""

from __future__ import annotations

import difflib

from fgraph.core.connection import temp_schema_writable

MIN_WORD = 4
LENGTH_SLACK = 2
SCANNED = 5000
CUTOFF = 0.8
CORRECTIONS = 2
NEAR_BEST = 0.05   # a second correction is kept only if nearly as similar as the first
VOCABULARY = "temp.fgraph_search_vocabulary"


def _vocabulary(conn) -> None:
    """Make the connection's vocabulary table once. It lives in ``temp``, never in the file, so a
    read-only handle makes it too."""
    if conn.execute("SELECT 1 FROM sqlite_temp_master WHERE name = 'fgraph_search_vocabulary'").fetchone():
        return
    with temp_schema_writable(conn):
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCABULARY} USING fts5vocab('main', 'fgraph_fts', 'row')")


def corrections(conn, word: str, charge) -> list[str]:
    """Up to ``CORRECTIONS`` words of the store's text close to ``word`` (lower case); [] if the
    word is too short or nothing is close enough."""
    if len(word) < MIN_WORD or not word.isalpha():
        return []
    _vocabulary(conn)
    first = word[0]
    rows = conn.execute(f"SELECT term, doc FROM {VOCABULARY} WHERE term >= ? AND term < ? LIMIT ?",
                        (first, chr(ord(first) + 1), SCANNED)).fetchall()
    charge(len(rows))
    matcher = difflib.SequenceMatcher(b=word)  # caches what it learns about `word`: set it once
    scored = []
    for term, documents in rows:
        if term == word or abs(len(term) - len(word)) > LENGTH_SLACK:
            continue
        matcher.set_seq1(term)
        if matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF:
            ratio = matcher.ratio()
            if ratio >= CUTOFF:
                scored.append((-ratio, -documents, term))
    scored.sort()
    return [term for ratio, _, term in scored[:CORRECTIONS] if -ratio >= -scored[0][0] - NEAR_BEST]
