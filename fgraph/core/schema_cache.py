"""The schema cache: attribute schemas kept across the transactions of one connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import apsw

    from fgraph.core.transact import WriterHead


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
        self.head: WriterHead | None = None  # WriterHead after our last commit, see transact

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
