"""Hypothesis strategies for random transaction sequences over a small universe.

A small pool of names and attributes makes collisions (replacement, retraction,
unique upserts, refs) frequent, which is where the semantics are subtle.
"""

from __future__ import annotations

from hypothesis import strategies as st

NAMES = ["ada", "bob", "cy", "dee"]
SCHEMA = [
    {"id": "p/tags", "fgraph/many": True},
    {"id": "p/email", "fgraph/type": "text", "fgraph/unique": True},
    {"id": "p/friend", "fgraph/type": "ref"},
]

texts = st.text(alphabet=st.sampled_from("ab\u00e9\u2028\n\"\\\x00z"), min_size=0, max_size=4)
long_texts = st.integers(min_value=250, max_value=300).map(lambda n: "x" * n)
VALUE_BY_ATTR = {
    "p/name": st.one_of(texts, long_texts),
    "p/age": st.integers(min_value=-(2**63), max_value=2**63 - 1),
    "p/score": st.floats(allow_nan=False, allow_infinity=False),
    "p/tags": st.sampled_from(["red", "green", "blue"]),
    "p/email": st.sampled_from(["a@x", "b@x", "c@x"]),
    "p/friend": st.sampled_from(NAMES).map(lambda n: {"ref": n}),
    "p/data": st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False,
                           allow_infinity=False) | texts,
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(texts, c, max_size=3),
                           max_leaves=5).map(lambda j: {"json": j}),
    "p/raw": st.binary(max_size=3).map(lambda b: {"bytes": __import__("base64").b64encode(b).decode()}),
    "p/when": st.integers(min_value=0, max_value=2**52).map(lambda i: {"instant": i}),
}
ATTRS = sorted(VALUE_BY_ATTR)


@st.composite
def fact_triple(draw):
    attr = draw(st.sampled_from(ATTRS))
    return draw(st.sampled_from(NAMES)), attr, draw(VALUE_BY_ATTR[attr])


@st.composite
def item(draw):
    kind = draw(st.sampled_from(["map", "assert", "retract3", "retract4", "retract2"]))
    e, a, v = draw(fact_triple())
    if kind == "map":
        extra = draw(fact_triple())
        m = {"id": e, a: v}
        if extra[1] != a:
            m[extra[1]] = extra[2]
        return m
    if kind == "assert":
        return ["assert", e, a, v]
    if kind == "retract4":
        return ["retract", e, a, v]
    if kind == "retract3":
        return ["retract", e, a]
    return ["retract", e]


transaction = st.one_of(item(), st.lists(item(), min_size=1, max_size=3))
histories = st.lists(transaction, min_size=1, max_size=8)


# Items the contract refuses, mixed into histories so cross-runtime tests compare rejections too.
REFUSED_ITEMS = st.sampled_from([
    {"id": "ada", "p/email": 5},                         # TypeError: text attribute
    {"id": "ada", "fgraph/type": "text"},                # system name on a user entity
    {"id": "ada", "bad name": 1},                        # SchemaError: attribute grammar
    {"id": "ada", "p/friend": {"ref": "nobody-here"}},   # NotFound: unknown ref
    {"id": "ada", "p/name": ["a", "b"]},                 # Conflict: array on cardinality one
    {"id": "ada", "p/name": None},                       # TypeError: null value
    {"id": "ada", "p/name": {"nested": 1}},              # TypeError: nested map
    ["cas", "ada", "p/name", "never-was", "new"],        # Conflict: CAS mismatch
    ["retract", "nobody-here", "p/name", "x"],
    ["assert", "ada"],                                   # TypeError: arity
    {"id": "ada", "p/age": 2**63},                       # TypeError: int64
    {"id": 9223372036854775808, "p/age": 1},
])
risky_transaction = st.one_of(item(), st.lists(item(), min_size=1, max_size=3), REFUSED_ITEMS,
                              st.lists(st.one_of(item(), REFUSED_ITEMS), min_size=2, max_size=3))
risky_histories = st.lists(risky_transaction, min_size=1, max_size=8)
