"""face — what people and agents touch: the click CLI (a thin skin: parse, call one
``Db`` method of the same name, print), the parsing of ``add`` input and the default
database path rules; later the MCP server.

May import: ``fgraph.db`` and the error types of ``fgraph.core.errors`` (through the
public ``fgraph`` names). No SQL and no apsw here.
"""
