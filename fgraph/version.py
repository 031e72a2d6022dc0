"""The one place the runtime's version is written: the wheel's metadata (``pyproject.toml``
reads it from here), ``fgraph --version``, ``fgraph version``, ``fgraph.__version__`` and the MCP
``serverInfo`` all take it from this module."""

__version__ = "0.1.0"
