"""The words of a question as entity-level matching reads them (decision S2, docs/search.md):
function words dropped, the words asking for recency set aside, and each kept word's FTS5 query.

- **Function words** of English and German (the English stemmer's language, and the second
  language of the stop list) carry no subject: "over", "away", "who", "der", "wer" are dropped
  unless the question is nothing else.
- **Recency words** ("recently", "latest", "current", "now", …) ask for an order, not a subject:
  they are set aside and make the newest matching entities rank higher.
- **Stems.** A word matches itself and, if its Snowball stem has at least ``MIN_PREFIX``
  letters, any word beginning with that stem (``deployment`` → ``deploy*``). A shorter stem
  matches its inflections only (``stem`` + e, s, es, ed, ing, y, ies, ied, a doubled final
  consonant + ed/ing), never any word it begins: "back" does not find "backoff", "manages"
  does not find "cert-manager", "caching" still finds "cache" and "verification" "verified".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_STEM = 3     # a stem shorter than this matches the exact word only
MIN_PREFIX = 6   # a stem shorter than this is never a prefix: it matches its inflections only
WORD = re.compile(r"\w+")
INFLECTIONS = ("", "e", "s", "es", "ed", "ing", "y", "ies", "ied")

# function words of questions: they carry no subject, and their stems match everything
ENGLISH = """
a about above after again against all also am an and any are as at away be been before being below
between both but by can could did do does doing down during each else even ever few for from further
had has have having he her here hers him his how i if in into is it its itself just me more most
much my no nor not of off on once only onto or other our ours out over own per same shall she should
so some such than that the their theirs them then there these they this those through to too under
until up upon us very via was we were what whatever when where whether which while who whom whose
why will with within without would yet you your yours
"""
GERMAN = """
aber als am an auch auf aus bei bin bis da dann das dass dem den der des die dies diese dieser dieses
doch du durch ein eine einem einen einer eines er es für gegen hat hatte ich ihr im in ist jetzt kann
mit nach nicht noch nur ob oder sehr sich sie sind so über um und uns unter vom von vor wann war warum
was welche welcher welches wenn wer wie wir wird wo worden wurde zu zum zur
"""
STOPWORDS = frozenset((ENGLISH + GERMAN).split())
# words asking for the newest: set aside as a signal (English, German)
RECENCY = frozenset("""
current currently latest lately newest now recent recently today
aktuell aktuelle aktuellen kürzlich neueste neuesten zuletzt
""".split())

_stemmer = None


def stem(word: str) -> str:
    """The English Snowball stem of a lower-case word."""
    global _stemmer
    if _stemmer is None:
        import snowballstemmer  # imported by the first entity search, not at start-up
        _stemmer = snowballstemmer.stemmer("english")
    return _stemmer.stemWord(word)


def inflections(text: str, stemmed: str) -> tuple:
    """The exact word and the inflected forms of its stem, as a short stem matches them."""
    forms = [text] + [stemmed + ending for ending in INFLECTIONS]
    if stemmed[-1:].isalpha() and stemmed[-1] not in "aeiouwxy":
        forms += [stemmed + stemmed[-1] + "ed", stemmed + stemmed[-1] + "ing"]
    return tuple(dict.fromkeys(forms))


@dataclass(frozen=True)
class Word:
    """One word of the question: as typed (lower case) and its stem."""

    text: str
    stem: str

    def fts_query(self) -> str:
        exact = f'"{self.text}"'
        if len(self.stem) < MIN_STEM:
            return exact
        if len(self.stem) >= MIN_PREFIX:
            return f'{exact} OR "{self.stem}"*'
        return " OR ".join(f'"{form}"' for form in inflections(self.text, self.stem))

    def matches(self, other: str) -> bool:
        """Whether ``other`` (one lower-case word) is this word or a relative its query finds."""
        if other == self.text:
            return True
        if len(self.stem) < MIN_STEM:
            return False
        if len(self.stem) >= MIN_PREFIX:
            return other.startswith(self.stem) or stem(other).startswith(self.stem)
        return other in inflections(self.text, self.stem)

    def names(self, attribute_name: str, *, relation: bool = False) -> bool:
        """Whether a part of an attribute's name is this word or a relative of it; for a
        ``relation``, a part of its local name only (``maintainers`` of ``service/maintainers``)."""
        if relation:
            attribute_name = attribute_name.rsplit("/", 1)[-1]
        return any(self.matches(part.lower()) for part in re.split(r"[/._-]+", attribute_name) if part)


def word_query(text: str) -> str:
    """The FTS5 query of one question word, as ``EntityMatch`` looks it up."""
    return Word(text, stem(text)).fts_query()


def question_words(words: tuple) -> list[Word]:
    """The words to look for: lower case, deduplicated, function and recency words dropped unless
    nothing else is left."""
    lowered = list(dict.fromkeys(w.lower() for w in words if w))
    kept = [w for w in lowered if w not in STOPWORDS and w not in RECENCY] or \
        [w for w in lowered if w not in STOPWORDS] or lowered
    return [Word(w, stem(w)) for w in kept]


def asks_recency(words: tuple) -> bool:
    """Whether the question asks for the newest ("what changed recently", "the current owner")."""
    lowered = {w.lower() for w in words}
    return bool(lowered & RECENCY) and bool(lowered - RECENCY - STOPWORDS)
