"""Genesis, transaction 64: the 18 system identities and their 39 facts (spec 01 §7–§8)."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING

import apsw

from fgraph import schema
from fgraph.core.canonical import dumps
from fgraph.core.identity import GENESIS_EVENT, uuid_to_gid
from fgraph.core.limits import FIRST_APP_ID, GENESIS_TX  # noqa: F401 (re-exported)
from fgraph.core.rows import Rows, event_hash
from fgraph.core.values import TAG_BOOL, TAG_INSTANT, TAG_TEXT

if TYPE_CHECKING:
    from fgraph.core.types import JSONObject

GENESIS_AT_FACT = 1   # the fact id of genesis' own fgraph/at (01 §8)
A_AT, A_BY, A_SOURCE, A_META, A_MANY, A_UNIQUE, A_NOHISTORY, A_TYPE, A_DIMS, A_DOC = range(1, 11)
A_EXCISED, A_UNDOES, A_IMPORTED_AT, A_VECTOR_MODEL = 11, 12, 13, 14
A_SHAPE, A_SHAPE_REQUIRED, A_SHAPE_ALLOWED, A_SHAPE_CLOSED = 15, 16, 17, 18
SYSTEM_MAX = 18


@functools.cache
def system_identities() -> tuple[JSONObject, ...]:
    raw = schema.read_text("system-identities.json")
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
    writer = Rows(conn)
    writer.identities([(row["id"], row["name"], None, GENESIS_TX) for row in rows]
                      + [(GENESIS_TX, None, uuid_to_gid(GENESIS_EVENT), GENESIS_TX)])
    writer.genesis_meta(FIRST_APP_ID, created_at)
    facts = [(GENESIS_TX, A_AT, created_at, TAG_INSTANT)]
    facts += [(row["id"], A_TYPE, row["type"], TAG_TEXT) for row in rows]
    facts += [(row["id"], A_DOC, row["doc"], TAG_TEXT) for row in rows]
    facts += [(A_SHAPE_REQUIRED, A_MANY, 1, TAG_BOOL), (A_SHAPE_ALLOWED, A_MANY, 1, TAG_BOOL)]
    for e, a, v, t in facts:
        writer.fact(e, a, v, t, None, GENESIS_TX)
    event = genesis_event(created_at)
    writer.event(GENESIS_TX, event, event_hash(event))
