"""The format-v2 layout: the normative DDL, classifying a file, genesis under a write lock.

The DDL text lives in ``fgraph/schema/format-v2.sql`` (package data; ``schema/`` at the top of the
repository links to it). A file
is ours only when its markers say so and its 15 objects match that DDL after
whitespace-run collapsing and lowercasing (spec 01 §4).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import apsw

from fgraph import schema
from fgraph.core.errors import FormatError
from fgraph.core.limits import APPLICATION_ID, USER_VERSION

if TYPE_CHECKING:
    from fgraph.core.identity import Clock

    # A row of ``sqlite_schema``: its type, name and sql (NULL for automatic indexes).
    SchemaObject = tuple[str, str, str | None]

FTS_SHADOW_TABLES = frozenset({
    "fgraph_fts_config", "fgraph_fts_content", "fgraph_fts_data",
    "fgraph_fts_docsize", "fgraph_fts_idx",
})

# Litestream 0.3.x creates these two bookkeeping tables in every database it replicates. Spec
# README decision 9: exactly these, with these shapes, are tolerated foreign objects (opens,
# writes, reads, doctor, snapshot and the digest ignore them) and copies are made without them.
TOLERATED_TABLES = {
    "_litestream_seq": ("table", "create table _litestream_seq (id integer primary key, seq integer)"),
    "_litestream_lock": ("table", "create table _litestream_lock (id integer)"),
}

EMPTY = "empty"      # markers (0, 0) and no objects: needs genesis
FGRAPH = "fgraph"    # a valid format-v2 file
FOREIGN = "foreign"


@functools.cache
def ddl_text() -> str:
    """The normative DDL, comments stripped, as executed at genesis."""
    text = schema.read_text("format-v2.sql")
    return "\n".join(line for line in text.splitlines() if not line.startswith("--")) + "\n"


def _normalise(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip().lower()


@functools.cache
def expected_objects() -> dict[str, tuple[str, str]]:
    """name -> (type, normalised sql) of the 15 required objects, from a scratch database."""
    scratch = apsw.Connection(":memory:")
    try:
        scratch.execute(ddl_text())
        rows = cast("list[tuple[str, str, str]]", scratch.execute(
            "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' AND sql IS NOT NULL"
        ).fetchall())
    finally:
        scratch.close()
    return {name: (kind, _normalise(sql)) for kind, name, sql in rows if name not in FTS_SHADOW_TABLES}


def _not_ours(path: str, why: str, hint: str) -> FormatError:
    return FormatError(f"{path!r} is not a usable fgraph database: {why}", hint)


def classify(conn: apsw.Connection, path: str) -> str:
    """EMPTY or FGRAPH; anything else raises FormatError without writing."""
    app_id, version, objects = _read_markers(conn, path)
    if (app_id, version) == (0, 0):
        if any(not tolerated(kind, name, sql) for kind, name, sql in objects):
            raise _not_ours(path, "it already holds tables of another application",
                            "fgraph needs a dedicated file; choose a new path")
        return EMPTY
    if (app_id, version) != (APPLICATION_ID, USER_VERSION):
        raise _not_ours(path, f"markers application_id={app_id}, user_version={version} are not format v2",
                        "only format-v2 files (application_id 1718055521, user_version 2) can be opened")
    validate_objects(objects, path)
    return FGRAPH


def _read_markers(conn: apsw.Connection, path: str) -> tuple[int, int, list[SchemaObject]]:
    """The markers and the objects as of one instant: read apart, a genesis committed by another
    process between the reads looks like tables of another application (a lost first write)."""
    from fgraph.core.txn import read_transaction

    with read_transaction(conn):
        try:
            app_id = cast(int, conn.execute("PRAGMA application_id").fetchall()[0][0])
            version = cast(int, conn.execute("PRAGMA user_version").fetchall()[0][0])
            objects = cast("list[SchemaObject]", conn.execute("SELECT type, name, sql FROM sqlite_schema").fetchall())
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            raise _not_ours(path, f"not a SQLite database ({exc})",
                            "point --db at an fgraph file, or at a new path to create one") from None
        except (apsw.ReadOnlyError, apsw.CantOpenError):
            # a permission problem (no -wal/-shm may be made beside a WAL file), not a foreign file:
            # the opener says which (sqlite_errors.not_writable)
            raise
        except apsw.Error as exc:
            raise _not_ours(path, f"SQLite could not read it ({exc})", "check the file and try again") from None
    return app_id, version, objects


def validate_objects(objects: Iterable[SchemaObject], path: str) -> None:
    expected = expected_objects()
    seen = {}
    for kind, name, sql in objects:
        if name.startswith("sqlite_") or name in FTS_SHADOW_TABLES or tolerated(kind, name, sql):
            continue
        if name not in expected:
            raise _not_ours(path, f"it holds a foreign {kind} {name!r}",
                            "fgraph files hold only fgraph objects; remove it or use a new file")
        seen[name] = (kind, _normalise(sql or ""))
    for name, (kind, sql) in expected.items():
        if name not in seen:
            raise _not_ours(path, f"the required {kind} {name!r} is missing", "run `fgraph doctor` on a backup")
        if seen[name] != (kind, sql):
            raise _not_ours(path, f"the {kind} {name!r} differs from the format-v2 definition",
                            "the file was altered outside fgraph; restore it from a backup or snapshot")


def tolerated(kind: str, name: str, sql: str | None) -> bool:
    """Whether the object is one of Litestream's two tables, exactly as Litestream creates it."""
    return TOLERATED_TABLES.get(name) == (kind, _normalise(sql or ""))


def drop_tolerated(conn: apsw.Connection) -> None:
    """Remove the tolerated tables from a copy, so that any runtime can open it (decision 9)."""
    present = [(kind, name, sql) for kind, name, sql in conn.execute(
        "SELECT type, name, sql FROM sqlite_schema WHERE name IN ('_litestream_seq', '_litestream_lock')")]
    for kind, name, sql in present:
        if tolerated(kind, name, sql):
            conn.execute(f'DROP TABLE "{name}"')


def initialize(conn: apsw.Connection, path: str, clock: Clock | int | None) -> None:
    """Create the layout and genesis in one write transaction, unless another process won."""
    from fgraph.core import genesis
    from fgraph.core.identity import make_clock, read_clock
    from fgraph.core.txn import write_transaction

    with write_transaction(conn):
        if classify(conn, path) == EMPTY:
            conn.execute(ddl_text())
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {USER_VERSION}")
            genesis.write_genesis(conn, read_clock(make_clock(clock)))
