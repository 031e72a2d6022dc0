"""The schema cache: attribute schemas kept across the transactions of one connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import apsw


class WriterHead(NamedTuple):
    """The store's head as our last commit left it: saves three reads per write.

    Valid while no other connection committed (``SchemaCache.validate`` clears it on a
    new ``PRAGMA data_version``) and this connection changed no row since
    (``total_changes`` moves with every write, committed or rolled back).
    """

    latest: int
    at: int
    next_id: int
    changes: int

    def current(self, conn: apsw.Connection) -> bool:
        return self.changes == conn.total_changes()


class SchemaCache:
    """Live schema facts of attributes, kept across transactions of one connection.

    Valid while no other connection has committed (``PRAGMA data_version``) and no
    write of ours touched a schema attribute; callers clear it after such writes
    and after any rollback.
    """

    def __init__(self) -> None:
        self.rows: dict[tuple[int, int], dict[tuple[int, Any], int]] = {}  # (e, a) -> live (t, v) -> fact id
        self.schemas: dict[int, dict[str, Any]] = {}  # attribute id -> schema summary built from ``rows``
        self.version: int | None = None
        self.has_shapes: bool | None = None
        self.head: WriterHead | None = None  # after our last commit (transact and apply write it)

    def validate(self, conn: apsw.Connection) -> None:
        version = conn.execute("PRAGMA data_version").fetchone()[0]  # type: ignore[index]  # a PRAGMA always has a row
        if version != self.version:
            self.clear()
            self.version = version

    def clear(self) -> None:
        self.rows.clear()
        self.schemas.clear()
        self.has_shapes = None
        self.head = None
