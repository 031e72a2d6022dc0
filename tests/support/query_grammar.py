"""Random stores and random queries drawn from the grammar of spec 12, for the differential test.

A store is a short random history over a fixed attribute pool (every value type, cardinality
many, refs that form chains and cycles, retractions so ``history`` differs from ``current``).
A query combines patterns over existing and missing attributes, predicates, ``not``, ``or``,
rule calls (a recursive one among them), aggregates, pulls, ``order``/``limit``/``offset`` and
sometimes a deliberate mistake, so rejected queries are compared too. Ordered queries order by
every find column, by some (so rows tie) or by variables outside ``find``: ties keep the
evaluation order and a row keeps its first binding, which both runtimes must share (issue 27).
"""

from __future__ import annotations

import random

ENTITIES = [f"e{i}" for i in range(8)]
ATTRS = {"p/name": "text", "p/age": "int", "p/score": "float", "p/flag": "bool", "p/tag": "text",
         "p/friend": "ref", "p/boss": "ref", "p/when": "instant", "p/data": "json"}
MANY = {"p/tag", "p/friend"}
MISSING = ["p/none", "q/zip"]
RULES = [
    {"head": ["above", "?x", "?y"], "body": [["?x", "p/boss", "?y"]]},
    {"head": ["above", "?x", "?y"], "body": [["?x", "p/boss", "?m"], {"rule": ["above", "?m", "?y"]}]},
    {"head": ["old", "?x"], "body": [["?x", "p/age", "?a"], [">", "?a", 40]]},
    {"head": ["pal", "?x", "?y"], "body": [["?x", "p/friend", "?y"]]},
    {"head": ["pal", "?x", "?y"], "body": [["?y", "p/friend", "?x"]]},
]


def value(rng: random.Random, attr: str):
    kind = ATTRS[attr]
    if kind == "text":
        return rng.choice(["Ann", "Bo", "Cy", "ann", "Éa", "z", "", "A😀", "Bob"])
    if kind == "int":
        return rng.choice([0, 1, 7, 30, 35, 42, 41, -3, 9007199254740993])
    if kind == "float":
        return rng.choice([0.5, 1.0, -2.25, 35.0, 1e16, 3.5])
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "ref":
        return {"ref": rng.choice(ENTITIES)}
    if kind == "instant":
        return {"instant": rng.choice(["2026-01-02T00:00:00Z", "1999-12-31T23:59:59.5Z", "2030-06-01T12:00:00Z"])}
    return {"json": rng.choice([{"k": 1}, [1, 2], "s", None, 3])}


DECLARATIONS = [("p/friend", {"type": "ref", "many": True}), ("p/boss", {"type": "ref"}), ("p/tag", {"many": True})]


def store(rng: random.Random) -> list:
    """Transactions (the ``transact`` data) of one random history, after ``DECLARATIONS``."""
    txs: list = []
    for _ in range(rng.randint(3, 7)):
        records = []
        for e in rng.sample(ENTITIES, rng.randint(1, 4)):
            record = {"id": e}
            for attr in rng.sample(sorted(ATTRS), rng.randint(1, 4)):
                record[attr] = [value(rng, attr) for _ in range(rng.randint(1, 2))] if attr in MANY \
                    else value(rng, attr)
            records.append(record)
        txs.append(records)
    for _ in range(rng.randint(0, 3)):
        attr = rng.choice(sorted(ATTRS))
        txs.append([["retract", rng.choice(ENTITIES), attr]])
    return txs


def pattern(rng: random.Random, bound: list) -> list:
    attr = rng.choice(sorted(ATTRS) * 3 + MISSING + ["?a"])
    e = rng.choice(bound + ["?e", "?f", rng.choice(ENTITIES), "_"]) if bound else rng.choice(["?e", "?f", "e1", "_"])
    if attr in ATTRS and rng.random() < 0.35:
        v = value(rng, attr)
    else:
        v = rng.choice(["?v", "?w", "_"] + (["?f"] if attr in ("p/friend", "p/boss") else []))
    out = [e, attr, v]
    if rng.random() < 0.15:
        out += [rng.choice(["?tx", "_"])] + ([rng.choice([True, False, "?added"])] if rng.random() < 0.5 else [])
    return out


def variables(clause) -> list:
    return [t for t in clause if isinstance(t, str) and t.startswith("?")] if isinstance(clause, list) else []


def query(rng: random.Random) -> dict:
    where, bound = [], []
    for _ in range(rng.randint(1, 3)):
        clause = pattern(rng, bound)
        where.append(clause)
        bound += [v for v in variables(clause) if v not in bound]
    roll = rng.random()
    if bound and roll < 0.25:
        left = rng.choice(bound)
        op = rng.choice(["=", "!=", "<", "<=", ">", ">=", "contains", "starts-with"])
        where.append([op, left, rng.choice([30, 1.0, "A", True, {"ref": "e1"}] + bound)])
    elif bound and roll < 0.4:
        e = rng.choice(bound)
        where.append({"not": [[e, rng.choice(sorted(ATTRS) + MISSING), rng.choice(["_", "?zz", value(rng, "p/age")])]]})
    elif bound and roll < 0.5:
        e = rng.choice(bound)
        where.append({"or": [[[e, "p/age", rng.choice([30, 35, 42])]], [[e, rng.choice(sorted(ATTRS)), "_"]]]})
    rules = None
    if rng.random() < 0.25:
        rules = RULES
        name = rng.choice(["above", "old", "pal"])
        args = {"above": 2, "old": 1, "pal": 2}[name]
        call = [name] + [rng.choice((bound or ["?e"]) + ["?r", "e1", "_"]) for _ in range(args)]
        where.append({"rule": call})
        bound += [a for a in call[1:] if isinstance(a, str) and a.startswith("?") and a not in bound]
    bound = [v for v in bound if v != "?zz"]
    if not bound:
        bound = ["?e"]
        where.append(["?e", "p/name", "_"])
    shape = rng.random()
    if shape < 0.2:
        find = [rng.choice(bound)] + [[rng.choice(["count", "count-distinct", "sum", "avg", "min", "max"]),
                                         rng.choice(bound)]]
        if rng.random() < 0.4:
            find = find[1:]
    elif shape < 0.3:
        pull = rng.choice([["*"], ["p/name", "p/_friend"], ["p/age", {"p/boss": ["p/name", "p/_boss"]}],
                           [{"p/friend": ["*"]}], ["p/_boss", "p/tag"]])
        find = [["pull", rng.choice(bound), pull]]
    else:
        find = rng.sample(bound, min(len(bound), rng.randint(1, 2)))
    q: dict = {"find": find, "where": where}
    if rules is not None:
        q["rules"] = rules
    if rng.random() < 0.25:
        q["source"] = "history"
    columns = [f if isinstance(f, str) else f"{f[0]}({f[1]})" for f in find]
    if rng.random() < 0.4:
        # every column, some of them (rows that tie keep evaluation order), or variables outside
        # `find` (each row keeps its first binding): the runtimes must agree on all three
        keys = rng.choice([columns, rng.sample(columns, rng.randint(1, len(columns))),
                           rng.sample(bound, rng.randint(1, min(2, len(bound))))])
        q["order"] = [[c, rng.choice(["asc", "desc"])] for c in rng.sample(keys, len(keys))]
        if rng.random() < 0.5:
            q["limit"] = rng.randint(0, 4)
        if rng.random() < 0.3:
            q["offset"] = rng.randint(0, 3)
    if rng.random() < 0.08:  # a deliberate mistake somewhere
        mistake = rng.choice(["key", "limit", "var", "const", "arity"])
        if mistake == "key":
            q["limti"] = 1
        elif mistake == "limit":
            q["limit"] = -1
        elif mistake == "var":
            q["find"] = ["?nowhere"]
        elif mistake == "const":
            q["where"] = q["where"] + [["?e", "p/name", {"bytes": "%%"}]]
        else:
            q["where"] = q["where"] + [["?e", "p/name"]]
    return q


def datoms_call(rng: random.Random) -> dict:
    index = rng.choice(["eavt", "avet", "vaet"])
    first = {"eavt": lambda: rng.choice(ENTITIES), "avet": lambda: rng.choice(sorted(ATTRS)),
             "vaet": lambda: rng.choice(ENTITIES)}[index]
    components = [first()] if rng.random() < 0.5 else []
    return {"index": index, "components": components, "source": rng.choice(["current", "history"]),
            "limit": rng.randint(1, 6)}
