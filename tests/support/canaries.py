"""Canary histories for the forgetting tests (issue 33): a source store where one entity, ``ada``,
holds canary values in every form the format stores differently (short text, long text kept as a
blob, bytes, JSON), other entities refer to her, and some events mix her facts with others'; and a
scan that counts canary bytes in every file of a store (database, WAL, shared memory, sidecars) or
any directory (a NATS server's store)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import fgraph

SHORT = "CANARY-short-7f3a9e"
LONG = "CANARY-long-" + "x" * 5000 + "-9b1c"
RAW = b"CANARY-bytes-41d2c8"
JSON_WORD = "CANARY-json-5e6f"
NEEDLES = [SHORT.encode(), b"CANARY-long-", RAW, base64.b64encode(RAW)[:16], JSON_WORD.encode(), b"CANARY"]


def write_history(db: fgraph.Db, others: int = 6) -> None:
    """Ada with canaries and history, people who know her, and events that mix her with others."""
    db.transact([{"id": "ada", "note/text": SHORT, "note/long": LONG, "note/raw": {"bytes": base64.b64encode(RAW).decode()},
                  "note/json": {"json": {"secret": JSON_WORD}}}], by="alice", source="intake")
    for i in range(others):
        db.transact([{"id": f"p{i}", "note/text": f"plain {i}", "person/rank": i}], by="bob")
    db.transact([{"id": "ada", "note/text": SHORT + "-v2"}])                        # history: a superseded canary
    db.transact([{"id": "p0", "rel/knows": {"ref": "ada"}, "note/text": "plain 0 again"}])   # mixed: p0 survives
    db.transact([{"id": "carol", "note/text": "carol keeps this", "rel/likes": {"ref": "p1"}},
                 {"id": "ada", "note/tag": SHORT + "-tag"}], by="carol", source="chat")   # mixed: carol survives
    db.transact([{"id": "p2", "person/rank": 20}])


def canary_hits(directory: Path, prefix: str = "", needles=None) -> dict:
    """``{file: hits}`` for every file holding a canary: with a ``prefix``, the files of ``directory``
    named ``prefix*`` (a store and everything beside it); without, every file under ``directory``.
    ``needles``: other byte strings to count than ``NEEDLES`` (an erased name, say)."""
    needles = NEEDLES if needles is None else needles
    hits = {}
    for root, _, files in os.walk(directory):
        if prefix and Path(root) != Path(directory):
            continue
        for name in files:
            path = Path(root) / name
            if not name.startswith(prefix):
                continue
            if not path.is_file():
                continue
            data = path.read_bytes()
            count = sum(data.count(needle) for needle in needles)
            if count:
                hits[str(path.relative_to(directory))] = count
    return hits


def store_files(directory: Path, name: str) -> list[str]:
    """The files of the store ``name`` in ``directory``: the database and everything beside it."""
    return sorted(p.name for p in Path(directory).iterdir() if p.name.startswith(name))


def others_state(db: fgraph.Db, names=("carol", "dave")) -> dict:
    """What a store holds besides ada: every other entity's live facts, by name."""
    out = {}
    for name in [f"p{i}" for i in range(50)] + list(names):
        try:
            facts = db.entity(name)
        except fgraph.NotFound:
            continue
        if facts:
            out[name] = facts
    return out


def ordinary_lines(db: fgraph.Db) -> set:
    """The event/1 lines that are neither redacted stubs nor excision events."""
    return {line for line in db.iter_events() if '"redacted":true' not in line}
