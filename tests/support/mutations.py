"""Mutations of streams, snapshots and documents, shared by the hostile-input family and the
cross-runtime restore test: byte flips, deleted, duplicated and swapped lines, truncation, and
structure-aware edits of one parsed record, optionally re-sealed so they reach the record checks."""

from __future__ import annotations

import hashlib
import json
import random as _random

import fgraph
from fgraph.core.canonical import dumps, loads


def records_of(text: str) -> list:
    """The parsed records of a snapshot's text."""
    return [loads(line) for line in text.splitlines() if line.strip()]


def reseal_records(records: list) -> str:
    """The text of parsed snapshot ``records`` whose last one, the footer, keeps its fields but gets the
    body's digest and (when it counts them) its receipts: an edited record reaches the record checks."""
    body = "".join(dumps(r) + "\n" for r in records[:-1])
    footer = dict(records[-1])
    footer["receipts"] = sum(1 for r in records if "receipt" in r) if footer.get("receipts") is not None else None
    footer["sha256"] = hashlib.sha256(body.encode()).hexdigest()
    return body + dumps(footer) + "\n"


def reseal(lines: list[str]) -> str:
    """A snapshot whose footer is recomputed, so the mutation reaches the record checks."""
    records = [json.loads(line) for line in lines if line.strip()]
    body = [r for r in records if not (isinstance(r, dict) and r.get("fgraph") == "end")]
    digest = hashlib.sha256("".join(dumps(r) + "\n" for r in body).encode()).hexdigest()
    footer = {"facts": sum(isinstance(r, dict) and "fact" in r for r in body),
              "fgraph": "end", "receipts": sum(isinstance(r, dict) and "receipt" in r for r in body),
              "sha256": digest}
    return "".join(dumps(r) + "\n" for r in body + [footer])


def random_json(random: _random.Random, depth: int = 0):
    makers = [lambda: None, lambda: True, lambda: random.randint(-2**70, 2**70), lambda: random.random() * 1e308,
              lambda: "x" * random.randrange(5), lambda: "\ud800" if random.random() < 0.1 else "é",
              lambda: {"ref": "p1"}]
    if depth < 3:
        makers += [lambda: [random_json(random, depth + 1) for _ in range(random.randrange(3))],
                   lambda: {f"k{i}": random_json(random, depth + 1) for i in range(random.randrange(3))}]
    return random.choice(makers)()


def edit(value, random: _random.Random):
    """A structure-aware edit: replace, drop or add somewhere inside a parsed record."""
    if isinstance(value, dict) and value and random.random() < 0.7:
        key = random.choice(sorted(value))
        action = random.randrange(3)
        if action == 0:
            return {k: v for k, v in value.items() if k != key}
        if action == 1:
            return {**value, key: edit(value[key], random)}
        return {**value, f"extra{random.randrange(9)}": random_json(random)}
    if isinstance(value, list) and value and random.random() < 0.7:
        index = random.randrange(len(value))
        copy = list(value)
        copy[index] = edit(value[index], random)
        return copy
    return random_json(random)


def mutate(text: str, random: _random.Random, sealed: bool) -> bytes:
    lines = text.splitlines(keepends=True)
    kind = random.randrange(7)
    if kind == 0:
        raw = bytearray(text.encode())
        for _ in range(random.randint(1, 3)):
            raw[random.randrange(len(raw))] ^= 1 << random.randrange(8)
        return bytes(raw)
    if kind == 1 and len(lines) > 1:
        del lines[random.randrange(len(lines))]
    elif kind == 2:
        lines.insert(random.randrange(len(lines) + 1), random.choice(lines))
    elif kind == 3 and len(lines) > 1:
        i, j = random.sample(range(len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 4:
        return text.encode()[: random.randrange(len(text))]
    else:
        i = random.randrange(len(lines))
        lines[i] = json.dumps(edit(json.loads(lines[i]), random), ensure_ascii=False, separators=(",", ":")) + "\n"
    out = "".join(lines)
    if sealed:
        try:
            out = reseal(out.splitlines())
        except (ValueError, TypeError, fgraph.FgraphError):
            pass  # a record our canonical form refuses (an int beyond int64): sent unsealed
    return out.encode("utf-8", "surrogatepass")
