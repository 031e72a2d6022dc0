"""fgraph: an embedded temporal fact database in one SQLite file (format v2)."""

from fgraph.core.errors import (
    Conflict,
    FgraphError,
    FormatError,
    NotFound,
    QueryError,
    ReadOnly,
    SchemaError,
    TooLarge,
    Unsupported,
    ValueTypeError,
)

__version__ = "0.1.0"

__all__ = [
    "Conflict", "FgraphError", "FormatError", "NotFound", "QueryError", "ReadOnly",
    "SchemaError", "TooLarge", "Unsupported", "ValueTypeError", "__version__",
]

from fgraph.db import Db, connect, restore_backup  # noqa: E402

__all__ += ["Db", "connect", "restore_backup"]
