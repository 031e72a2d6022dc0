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
from fgraph.core.mappings import TxReport  # noqa: E402
from fgraph.query.results import Result  # noqa: E402
from fgraph.query.search import SearchResult  # noqa: E402

# The published runtime's names (spec 11 §3), so code written against it imports unchanged.
# ``TypeError`` is only an attribute of the package: no module of ours shadows the built-in.
FGraphError = FgraphError
globals()["TypeError"] = ValueTypeError

__all__ += ["Db", "FGraphError", "Result", "SearchResult", "TxReport", "connect", "restore_backup"]
