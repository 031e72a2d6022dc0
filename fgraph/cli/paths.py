"""Which database file a command uses: ``--db``, ``FGRAPH_DB``, or the default (spec 09 §2).

The default is ``facts.fgraph`` in the current directory since 1.2.0; the
pre-1.2 default ``fgraph.db`` is still picked up when it is the only one
there. Whether ``facts.fgraph`` is "an initialized fgraph database" is read from its
header by ``fgraph.core.probe``, so choosing a path never creates a file and never takes a lock.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from fgraph.core import settings
from fgraph.core.errors import FormatError
from fgraph.core.probe import is_initialized

DEFAULT_PATH, LEGACY_PATH, ENV_VAR = settings.DEFAULT_DB_PATH, settings.LEGACY_DB_PATH, settings.DB


def resolve_db_path(explicit: str | None, env: Mapping[str, str]) -> str:
    """The path a command should open: ``explicit`` (``--db``), else ``env[FGRAPH_DB]``, else the default."""
    if explicit is not None:
        return _check_explicit(explicit, "--db")
    if ENV_VAR in env:
        return _check_explicit(env[ENV_VAR], ENV_VAR)
    return default_path()


def default_path(directory: str = ".") -> str:
    """The implicit path: ``facts.fgraph``, or the legacy ``fgraph.db`` (table of 09 §2)."""
    new = os.path.join(directory, DEFAULT_PATH) if directory != "." else DEFAULT_PATH
    legacy = os.path.join(directory, LEGACY_PATH) if directory != "." else LEGACY_PATH
    if not os.path.exists(new):
        return legacy if os.path.exists(legacy) else new
    if not os.path.exists(legacy) or is_initialized(new):
        return new
    raise FormatError(
        f"legacy default database {legacy} exists and {new} is not an initialized fgraph database",
        f"pass --db {legacy} to keep using the legacy file, or --db {new} to start the new default")


def _check_explicit(path: str, source: str) -> str:
    if path == "":
        raise FormatError(f"the database path given by {source} is empty",
                          f"pass --db PATH, or unset {ENV_VAR} to use {DEFAULT_PATH}")
    return path
