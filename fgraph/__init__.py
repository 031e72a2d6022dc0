"""fgraph: an embedded temporal fact database in one SQLite file (format v2).

The error types are imported at once (they are small and every caller needs them); the façade
(``Db``, ``connect`` …) is imported on first use, so that importing any part of the package —
the CLI asking for ``--help``, a test importing one module — does not load the whole engine.
"""

from typing import TYPE_CHECKING, Any

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
from fgraph.version import __version__

if TYPE_CHECKING:  # what the lazy names below are, for type checkers (importing them here would load the engine)
    from fgraph.core.mappings import TxReport as TxReport
    from fgraph.db import Db as Db, connect as connect, restore_backup as restore_backup
    from fgraph.query.datalog.results import Result as Result
    from fgraph.query.search.run import SearchResult as SearchResult

# The published runtime's names (spec 11 §3), so code written against it imports unchanged.
# ``TypeError`` is only an attribute of the package: no module of ours shadows the built-in.
FGraphError = FgraphError
globals()["TypeError"] = ValueTypeError

_LAZY = {
    "Db": "fgraph.db", "connect": "fgraph.db", "restore_backup": "fgraph.db",
    "TxReport": "fgraph.core.mappings", "Result": "fgraph.query.datalog.results", "SearchResult": "fgraph.query.search.run",
}

__all__ = [
    "Conflict", "FgraphError", "FormatError", "NotFound", "QueryError", "ReadOnly",
    "SchemaError", "TooLarge", "Unsupported", "ValueTypeError", "__version__",
    "FGraphError", *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fgraph' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
