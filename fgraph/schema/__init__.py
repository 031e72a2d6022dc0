"""The normative DDL (``format-v2.sql``) and the system identities, shipped as package data."""

import os


def read_text(name: str) -> str:
    """One of this package's data files, through its loader (a plain file, or a zip member).

    pkgutil.get_data does the same but imports importlib.util, about 3 ms of every start."""
    # A module's __loader__ global is set by the import system; mypy knows only __file__ and the like.
    data: bytes = __loader__.get_data(os.path.join(os.path.dirname(__file__), name))  # type: ignore[name-defined]
    return data.decode("utf-8")
