"""Random stores for search, and random search requests and schema/1 manifests over them, for
tests/interop/test_interop_search.py. Everything is drawn from small vocabularies so that words,
vectors and values collide: bm25 ties, cosine ties (equal and proportional vectors, zero
vectors), shared filter values, hubs of refs, and bad requests of every kind of spec 13 §2.2.
"""

from __future__ import annotations

import json
import random

WORDS = ["memory", "agent", "tools", "graph", "fact", "small", "composable", "café", "x²", "foo_bar",
         "schema", "search", "Review", "alpha", "beta"]
KINDS = ["guide", "reference", "note", "task"]
DIMS = 3

DECLARATIONS = [
    ("doc/title", {"type": "text"}),
    ("doc/kind", {"type": "text"}),
    ("doc/rank", {"type": "int"}),
    ("doc/tags", {"many": True}),
    ("doc/embedding", {"type": "vector", "dims": DIMS}),
    ("doc/related", {"ref": True, "many": True}),
    ("doc/owner", {"ref": True}),
    ("user/email", {"type": "text", "unique": True}),
]


def _text(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(1, 6))
    if rng.random() < 0.05:  # long enough for the 2 KiB caps of value and snippet
        words = words + ["é" * 700] * rng.randint(1, 3) + rng.choices(WORDS, k=3)
    return " ".join(words)


def _vector(rng: random.Random) -> list:
    if rng.random() < 0.2:
        base = rng.choice([[1, 0, 0], [1, 1, 0], [1, 2, 3]])
        return [x * rng.choice([1, 2, 3, -1]) for x in base]  # proportional: equal cosines
    return [rng.randint(-2, 2) for _ in range(DIMS)]  # now and then all zeroes


def store(rng: random.Random) -> list:
    """Transactions (data, tx metadata or None) for one store."""
    n = rng.choice([8, 20, 40, 60, 120])
    names = [f"d{i}" for i in range(n)]
    users = [f"u{i}" for i in range(4)]
    txs: list = [([{"id": u, "user/email": f"{u}@example.test"} for u in users], None)]
    hub = rng.random() < 0.3
    for start in range(0, n, 10):
        batch = []
        for name in names[start:start + 10]:
            entity: dict = {"id": name}
            if rng.random() < 0.8:
                entity[rng.choice(["doc/title", "doc/body", "doc/title"])] = _text(rng)
            if rng.random() < 0.3:
                entity["doc/summary"] = _text(rng)
            if rng.random() < 0.6:
                entity["doc/kind"] = rng.choice(KINDS)
            if rng.random() < 0.4:
                entity["doc/rank"] = rng.randint(0, 3)
            if rng.random() < 0.3:
                entity["doc/tags"] = rng.sample(KINDS, rng.randint(1, 2))
            if rng.random() < 0.6:
                entity["doc/embedding"] = {"vector": _vector(rng)}
            if rng.random() < 0.4:
                entity["doc/owner"] = {"ref": rng.choice(users)}
            if hub and name != "d0":
                entity["doc/related"] = [{"ref": "d0"}]
            elif rng.random() < 0.4:
                entity["doc/related"] = [{"ref": rng.choice(names)} for _ in range(rng.randint(1, 3))]
            batch.append(entity)
        meta = {"doc/note": _text(rng)} if rng.random() < 0.2 else None
        txs.append((batch, meta))
    for _ in range(rng.randint(0, 4)):  # retractions and changes leave history behind
        victim = rng.choice(names)
        txs.append((rng.choice([["retract", victim, "doc/title"], ["retract", victim],
                                {"id": victim, "doc/title": _text(rng)}]), None))
    return txs


def search_args(rng: random.Random) -> list:
    """CLI arguments of one search, now and then a bad one."""
    args = []
    roll = rng.random()
    if roll < 0.75:
        words = rng.choices(WORDS + ["missing", "TOOLS", "Cafe"], k=rng.randint(1, 3))
        text = " ".join(words)
        if rng.random() < 0.06:
            text = rng.choice(["", "   ", "!!!", "memory OR tools", "tool*", "\"agent\"", "col:tools"])
        args.append(f"--text={text}")
    if roll > 0.5 or rng.random() < 0.1:
        vector = _vector(rng) if rng.random() < 0.9 else rng.choice(
            [[1, 0], [1, 0, 0, 0], [0, 0, 0], [], ["1", 0, 0], [True, 0, 0], [1e300, 0, 0]])
        args.append("--vector=" + json.dumps(vector) if rng.random() < 0.95 else "--vector=1,0,0")
        if rng.random() < 0.95:
            args.append("--vector-attribute=" + rng.choice(
                ["doc/embedding"] * 12 + ["doc/title", "nope/none", "fgraph/dims", "bad"]))
    elif rng.random() < 0.03:
        args.append("--vector-attribute=doc/embedding")
    if rng.random() < 0.5:
        args.append(f"--k={rng.choice([1, 2, 3, 5, 10, 10, 25, 100, 0, 101])}")
    if rng.random() < 0.4:
        args.append(f"--expand={rng.choice([1, 1, 2, 2, 3, 0, 4])}")
    for _ in range(rng.choices([0, 1, 2, 17], weights=[60, 25, 12, 3])[0]):
        args.append("--filter=" + json.dumps(_filter(rng), ensure_ascii=False))
    for _ in range(rng.choices([0, 1, 2], weights=[80, 15, 5])[0]):
        args.append("--text-attribute=" + rng.choice(
            ["doc/title", "doc/body", "doc/summary", "doc/note", "doc/kind", "fgraph/doc", "nope/none", "bad"]))
    return args


def _filter(rng: random.Random):
    if rng.random() < 0.5:
        return rng.choice([["doc/kind", rng.choice(KINDS)], ["doc/tags", rng.choice(KINDS)],
                           ["doc/owner", {"ref": f"u{rng.randint(0, 3)}"}], ["doc/rank", rng.randint(0, 3)]])
    return rng.choice([
        ["doc/kind", rng.choice(KINDS)], ["doc/kind", rng.choice(KINDS)], ["doc/tags", rng.choice(KINDS)],
        ["doc/rank", rng.randint(0, 3)], ["doc/rank", 1.0], ["doc/kind", 1], ["doc/kind", None],
        ["doc/owner", {"ref": f"u{rng.randint(0, 4)}"}], ["doc/owner", {"ref": ["user/email", "u1@example.test"]}],
        ["doc/owner", {"ref": ["user/email", "ghost@example.test"]}], ["doc/owner", "u1"],
        ["nope/none", {"ref": "ghost"}], ["doc/related", {"ref": f"d{rng.randint(0, 9)}"}],
        ["doc/kind"], ["doc/kind", "a", "b"], [5, "x"], "doc/kind", {"doc/kind": "guide"},
    ])


def manifest(rng: random.Random, exported: dict):
    """A manifest near ``exported`` (the store's own): attributes and shapes added, changed and
    dropped; now and then a malformed one."""
    if rng.random() < 0.1:
        return rng.choice([[], "schema/1", {"fgraph": "schema/2"}, {"fgraph": "schema/1", "extra": 1},
                           {"fgraph": "schema/1", "attributes": [{"name": "a/b"}]},
                           {"fgraph": "schema/1", "attributes": [{"name": "bad", "declared": {}}]},
                           {"fgraph": "schema/1", "attributes": [{"name": "a/b", "declared": {"type": "blob"}}]},
                           {"fgraph": "schema/1", "attributes": [{"name": "a/b", "declared": {"dims": True}}]},
                           {"fgraph": "schema/1", "attributes": [{"name": "a/b", "declared": {"many": True}}] * 2}])
    attributes = {a["name"]: dict(a["declared"]) for a in exported["attributes"]}
    for _ in range(rng.randint(0, 3)):
        name = rng.choice(sorted(attributes) + ["doc/body", "doc/summary", "new/flag", "doc/note"])
        change = rng.choice(["type", "many", "unique", "doc", "drop", "nohistory", "dims", "vector"])
        declared = attributes.setdefault(name, {})
        if change == "drop":
            attributes.pop(name)
        elif change == "type":
            declared["type"] = rng.choice(["text", "int", "json", "ref", "bool"])
        elif change == "dims":
            declared["dims"] = rng.choice([2, 3])
        elif change == "vector":
            declared.update(type="vector", vector_model="m1")
        elif change == "doc":
            declared["doc"] = rng.choice(["", "what it holds"])
        else:
            declared[change] = rng.random() < 0.5
    shapes = [dict(s) for s in exported.get("shapes", [])]
    if rng.random() < 0.4:
        required = rng.sample(["doc/title", "doc/kind", "user/email"], rng.randint(0, 2))
        shapes.append({"name": "shape/doc", "required": required,
                       "allowed": rng.sample(["doc/tags", "doc/rank"], rng.randint(0, 2)),
                       "closed": rng.random() < 0.3})
    elif shapes and rng.random() < 0.3:
        shapes.pop()
    return {"fgraph": "schema/1", "attributes": [{"name": n, "declared": d} for n, d in attributes.items()],
            "shapes": shapes}
