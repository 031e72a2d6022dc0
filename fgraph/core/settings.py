"""Every environment variable fgraph reads, in one place.

``SETTINGS`` is the table; docs/settings.md prints it and ``tests/core/test_settings.py`` checks that
the two agree and that no other module names an ``FGRAPH_*`` variable. The one exception is a log
adapter of ``fgraph sync``, which declares its own rows beside its code (``SETTINGS`` of
``fgraph/bridges/sync/adapters/nats.py``); the page shows them after this table and the test
checks the union (``fgraph.bridges.sync.adapters.settings()``). Code reads a setting
through ``read(name)`` (a name not in the table is a bug, so it raises), or, for the two options
click resolves itself (``--query-budget``, ``--by``), passes the name from here as ``envvar``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from fgraph.core.errors import ValueTypeError
from fgraph.core.limits import DEFAULT_QUERY_BUDGET


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, its default as the docs show it, and what it does."""

    name: str
    default: str   # as shown in the docs
    meaning: str


DB, QUERY_BUDGET, BY = "FGRAPH_DB", "FGRAPH_QUERY_BUDGET", "FGRAPH_BY"
CLOCK, EVENT_SEED = "FGRAPH_CLOCK", "FGRAPH_EVENT_SEED"
EMBED_TIMEOUT, DEBUG, COMPLETE = "FGRAPH_EMBED_TIMEOUT", "FGRAPH_DEBUG", "_FGRAPH_COMPLETE"
LITESTREAM_VFS, REPLICA_TIMEOUT = "FGRAPH_LITESTREAM_VFS", "FGRAPH_REPLICA_TIMEOUT"
VECTOR_INDEX, EMBED_CMD = "FGRAPH_VECTOR_INDEX", "FGRAPH_EMBED_CMD"

#: the CLI's database when neither --db nor FGRAPH_DB names one; a lone legacy file is still used
DEFAULT_DB_PATH, LEGACY_DB_PATH = "facts.fgraph", "fgraph.db"
EMBED_TIMEOUT_SECONDS = 60.0

SETTINGS = (
    Setting(DB, f"`{DEFAULT_DB_PATH}` (a lone legacy `{LEGACY_DB_PATH}` is still used)",
            "database file of a CLI command without `--db`; an empty value is a `FormatError`"),
    Setting(QUERY_BUDGET, f"{DEFAULT_QUERY_BUDGET}", "work units a query may spend (CLI `--query-budget`)"),
    Setting(BY, "none", "author recorded on CLI writes (`--by`)"),
    Setting(CLOCK, "the system clock", "a constant transaction clock in integer microseconds, for reproducible "
                                       "runs; anything else is a `TypeError`"),
    Setting(EVENT_SEED, "random UUIDs", "derive event UUIDs from this seed and the transaction id (tests only)"),
    Setting(EMBED_TIMEOUT, f"{EMBED_TIMEOUT_SECONDS:g}", "seconds an `--embed` command may take per text; not a "
                                                         "positive number is a `TypeError`"),
    Setting(EMBED_CMD, "unset", "the embedder of `mcp` (recall and remember) and of a `search` naming "
            "`--vector-attribute`, when `--embed-cmd` gives none: a program as `--embed-cmd` takes it, or "
            "`model2vec:NAME_OR_FOLDER` (the extra `fgraph[embed]`; docs/search.md S2)"),
    Setting(DEBUG, "unset", "`1` lets an internal error's traceback through instead of the one-line report"),
    Setting(COMPLETE, "unset", "click's shell-completion protocol, set by the script `--show-completion` prints"),
    Setting(LITESTREAM_VFS, "the `litestream-vfs` package's", "the litestream-vfs SQLite extension that opens a "
            "`litestream:URL` read replica (docs/replication.md)"),
    Setting(VECTOR_INDEX, "unset", "`1`: vector search asks an approximate index beside the database for its "
            "candidates and scores them exactly (the extra `fgraph[vectors]`; docs/search.md V1)"),
    Setting(REPLICA_TIMEOUT, "30", "seconds a `litestream:URL` replica may take to open (it waits for a first "
                                   "snapshot) and each read of it may take (a `NotFound` when its storage does not "
                                   "answer); not a positive number is a `TypeError`"),
)
NAMES = frozenset(s.name for s in SETTINGS)


def read(name: str | Setting, environ: Mapping[str, str] | None = None) -> str | None:
    """The raw value of setting ``name`` (None when unset). A log adapter's own setting is passed
    as the ``Setting`` row its module declares (core cannot import it; docs/settings.md shows
    those rows after this table, fgraph.bridges.sync.adapters.settings())."""
    if isinstance(name, Setting):
        name = name.name
    elif name not in NAMES:
        raise KeyError(f"{name} is not a documented setting; add it to fgraph.core.settings.SETTINGS")
    return (os.environ if environ is None else environ).get(name)


def debug() -> bool:
    return read(DEBUG) == "1"


def embed_timeout() -> float:
    """Seconds per embedder call: FGRAPH_EMBED_TIMEOUT, else the default; nonsense is refused."""
    return seconds(EMBED_TIMEOUT, EMBED_TIMEOUT_SECONDS, example=30)


def seconds(name: str, default: float, *, example: float) -> float:
    """A setting that is a positive, finite number of seconds; unset or empty is ``default``."""
    raw = read(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ValueTypeError(f"{name}={raw!r} is not a positive number of seconds",
                             f"set it to seconds such as {example:g}, or unset it for {default:g}")
    return value
