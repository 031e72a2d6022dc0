"""The schema cache: attribute schemas kept across the transactions of one connection."""

from __future__ import annotations


class SchemaCache:
    """Live schema facts of attributes, kept across transactions of one connection.

    Valid while no other connection has committed (``PRAGMA data_version``) and no
    write of ours touched a schema attribute; callers clear it after such writes
    and after any rollback.
    """

    def __init__(self):
        self.rows: dict[tuple, dict] = {}
        self.schemas: dict[int, dict] = {}      # attribute id -> schema summary built from ``rows``
        self.version = None
        self.has_shapes: bool | None = None
        self.head = None                        # WriterHead after our last commit, see transact

    def validate(self, conn) -> None:
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self.version:
            self.clear()
            self.version = version

    def clear(self) -> None:
        self.rows.clear()
        self.schemas.clear()
        self.has_shapes = None
        self.head = None
