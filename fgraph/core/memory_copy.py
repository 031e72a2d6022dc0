"""An in-memory, writable copy of an open database (``fgraph mcp --propose``'s planning copy,
decision M10 in docs/mcp.md).

The copy is the store's pages serialized from its connection (one read transaction, so one
consistent state) and deserialized into a private ``:memory:`` connection configured as
``open_connection`` configures a writer. Nothing it does reaches the file it came from.
"""

from __future__ import annotations

import apsw

from fgraph.core import connection
from fgraph.core.limits import MEMORY

_FORMAT_VERSIONS = (18, 19)   # the header's write and read versions: 2 in a WAL file, 1 in a legacy one


def image(conn: apsw.Connection) -> bytes:
    """The database of ``conn`` as one image an in-memory connection can open: SQLite cannot
    open a deserialized WAL header ("unable to open database file"), so it is marked legacy."""
    pages = bytearray(conn.serialize("main"))
    for offset in _FORMAT_VERSIONS:
        if offset < len(pages):
            pages[offset] = 1
    return bytes(pages)


def memory_copy(conn: apsw.Connection) -> apsw.Connection:
    """A new ``:memory:`` connection holding what ``conn`` holds now, writable."""
    copy = apsw.Connection(MEMORY)
    try:
        copy.deserialize("main", image(conn))
        connection.disable_foreign_keys(copy)
        connection.distrust_schema(copy)
        connection.set_query_only(copy, False)
    except BaseException:
        copy.close()
        raise
    return copy
