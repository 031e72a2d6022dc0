"""A search request's shape (spec 13 §2): the checks that need no database, in the order the
published runtime makes them, so the same bad request fails with the same error name.

What needs the database (attribute names, filter values, dims) is resolved by
``fgraph.query.search.lists``; ``SearchRequest`` only carries what was asked, validated.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from fgraph.core import values
from fgraph.core.canonical import short_repr
from fgraph.core.checks import strict_int
from fgraph.core.errors import ValueTypeError
from fgraph.core.limits import SEARCH_EXPAND, SEARCH_K, SEARCH_MAX_EXPAND, SEARCH_MAX_K

OPTIONS = ("text", "vector", "k", "expand", "filters", "vector_attribute", "text_attributes", "match")
# fact: every word in one fact (spec 13, the published rule); entity: the words across an
# entity's facts and the names it refers to; fill: fact hits first, then entity hits to fill k
MATCHES = ("fact", "entity", "fill")
MAX_FILTERS, MAX_TEXT_ATTRIBUTES = 16, 16
_INTEGER_FROM = "use an integer from {low} through {high}"
WORD = re.compile(r"\w+")
_SEQUENCES = (list, tuple)


@dataclass(frozen=True)
class SearchRequest:
    """``words`` is None without a keyword signal, ``()`` for a text with no word in it."""

    words: tuple | None
    vector: object          # as given; query_vector() checks it, after the names are resolved
    k: int
    expand: int
    filters: tuple          # ((attribute name, raw value), ...)
    vector_attribute: str | None
    text_attributes: tuple
    match: str = "fact"

    def fts_query(self) -> str:
        """Every word must match; each word is one quoted FTS5 string, so no FTS syntax survives."""
        return " ".join(f'"{word}"' for word in self.words)


def check_options(options: dict) -> None:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueTypeError(f"unknown search options {unknown}",
                             "use text, vector, k, expand, filters, vector_attribute, text_attributes, match")


def parse(text=None, vector=None, k=SEARCH_K, expand=SEARCH_EXPAND, filters=(), vector_attribute=None,
          text_attributes=(), match="fact") -> SearchRequest:
    if text is not None and not isinstance(text, str):
        raise ValueTypeError(f"search text {short_repr(text)} is not a string", "pass the words to look for")
    has_text = text is not None and text.strip() != ""
    if not has_text and vector is None:
        raise ValueTypeError("search needs a non-blank text or a vector",
                             "pass --text, or --vector with --vector-attribute")
    strict_int(k, "search k={value!r} is invalid", _INTEGER_FROM, low=1, high=SEARCH_MAX_K)
    strict_int(expand, "search expand={value!r} is invalid", _INTEGER_FROM, low=0, high=SEARCH_MAX_EXPAND)
    pairs = _filters(filters)
    names = _text_attributes(text_attributes)
    if not isinstance(vector_attribute, str):
        vector_attribute = None
    if vector is not None and vector_attribute is None:
        raise ValueTypeError("a vector search needs vector_attribute",
                             "name the attribute holding the embeddings (--vector-attribute)")
    if vector is None and vector_attribute is not None:
        raise ValueTypeError("vector_attribute was given without a vector",
                             "pass the query vector too, or drop vector_attribute")
    if match not in MATCHES:
        raise ValueTypeError(f"search match {short_repr(match)} is unknown",
                             "use fact (every word in one fact), entity or fill")
    return SearchRequest(words=tuple(WORD.findall(text)) if has_text else None, vector=vector,
                         k=k, expand=expand, filters=pairs, vector_attribute=vector_attribute,
                         text_attributes=names, match=match)


def _filters(raw) -> tuple:
    if not isinstance(raw, _SEQUENCES):
        raise ValueTypeError("search filters must be an array of [attribute, value] pairs",
                             'pass [["note/kind", "guide"]]')
    if len(raw) > MAX_FILTERS:
        raise ValueTypeError(f"search has {len(raw)} filters, more than {MAX_FILTERS}", "combine or drop filters")
    pairs = []
    for pair in raw:
        if not isinstance(pair, _SEQUENCES) or len(pair) != 2 or not isinstance(pair[0], str):
            raise ValueTypeError(f"search filter {short_repr(pair)} is not an [attribute, value] pair",
                                 'write each filter as ["namespace/attribute", value]')
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def _text_attributes(raw) -> tuple:
    if not isinstance(raw, _SEQUENCES):
        raise ValueTypeError("text_attributes must be an array of attribute names", 'pass ["note/text"]')
    if len(raw) > MAX_TEXT_ATTRIBUTES or not all(isinstance(name, str) for name in raw):
        raise ValueTypeError(f"text_attributes must be at most {MAX_TEXT_ATTRIBUTES} attribute names",
                             'pass names such as ["note/text"]')
    return tuple(raw)


def query_vector(raw) -> tuple:
    """The query as float32 values, as the published runtime rounds it."""
    if not isinstance(raw, _SEQUENCES):
        raise ValueTypeError(f"search vector {short_repr(raw)} is not an array of numbers",
                             "pass the embedding as a non-empty array of finite numbers")
    packed = values.pack_vector(list(raw))
    vector = struct.unpack(f"<{len(packed) // 4}f", packed)
    if not any(vector):
        raise ValueTypeError("search vector is all zeroes, so cosine similarity is undefined",
                             "pass a non-zero embedding")
    return vector
