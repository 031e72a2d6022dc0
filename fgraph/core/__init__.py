"""core — the file and the write path: format v2, values, canonical JSON, identities,
the connection policy, the catalog of indexed lookups, planning, constraints, the one
writer (``transact``), reads and the error types.

May import: the standard library, apsw and orjson — and nothing else of fgraph.
Everything above (streams, ops, query, db, bridges, mcp, cli) builds on this wing.
"""
