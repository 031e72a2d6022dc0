"""Features that meet the outside world, built on ``Db``: ``add`` input, importers, sync, the
Datasette browser and the embedder pipe. The CLI and MCP faces call them; they never touch SQLite."""
