"""Genesis, transaction 64: the 18 system identities and their 39 facts (spec 01 §7–§8)."""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json

import apsw

from fgraph.core.canonical import dumps
from fgraph.core.identity import GENESIS_EVENT, GENESIS_TX, uuid_to_gid

FIRST_APP_ID = 65
A_AT, A_BY, A_SOURCE, A_META, A_MANY, A_UNIQUE, A_NOHISTORY, A_TYPE, A_DIMS, A_DOC = range(1, 11)
A_EXCISED, A_UNDOES, A_IMPORTED_AT, A_VECTOR_MODEL = 11, 12, 13, 14
A_SHAPE, A_SHAPE_REQUIRED, A_SHAPE_ALLOWED, A_SHAPE_CLOSED = 15, 16, 17, 18
SYSTEM_MAX = 18


@functools.cache
def system_identities() -> tuple[dict, ...]:
    raw = importlib.resources.files("fgraph.schema").joinpath("system-identities.json").read_text("utf-8")
    return tuple(json.loads(raw)["identities"])


@functools.cache
def system_names() -> dict[str, int]:
    return {row["name"]: row["id"] for row in system_identities()}


def genesis_event(created_at: int) -> str:
    return dumps({
        "asserted": [], "at": created_at,
        "created": [row["name"] for row in system_identities()],
        "event": GENESIS_EVENT, "fgraph": "event/1", "retracted": [],
    })


def write_genesis(conn: apsw.Connection, created_at: int) -> None:
    """Rows of 01 §8, in order; the caller holds the write transaction."""
    rows = system_identities()
    conn.executemany("INSERT INTO fgraph_ids (id, name, gid, created_tx) VALUES (?, ?, NULL, 64)",
                     [(row["id"], row["name"]) for row in rows])
    conn.execute("INSERT INTO fgraph_ids (id, name, gid, created_tx) VALUES (64, NULL, ?, 64)",
                 (uuid_to_gid(GENESIS_EVENT),))
    conn.execute("INSERT INTO fgraph_meta (key, value) VALUES ('next_id', ?), ('created_at', ?)",
                 (FIRST_APP_ID, created_at))
    insert = "INSERT INTO fgraph_facts (e, a, v, t, tx, rx) VALUES (?, ?, ?, ?, 64, NULL)"
    conn.execute(insert, (GENESIS_TX, A_AT, created_at, 5))
    conn.executemany(insert, [(row["id"], A_TYPE, row["type"], 4) for row in rows])
    conn.executemany(insert, [(row["id"], A_DOC, row["doc"], 4) for row in rows])
    conn.executemany(insert, [(A_SHAPE_REQUIRED, A_MANY, 1, 1), (A_SHAPE_ALLOWED, A_MANY, 1, 1)])
    conn.execute("INSERT INTO fgraph_fts (rowid, text) SELECT id, v FROM fgraph_facts WHERE id BETWEEN 2 AND 37")
    event = genesis_event(created_at)
    conn.execute("INSERT INTO fgraph_events (tx, event_hash, event_data) VALUES (64, ?, ?)",
                 (hashlib.sha256(event.encode("utf-8")).digest(), event))
