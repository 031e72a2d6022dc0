"""The MCP server: the SDK wiring, the tool bodies and the resources, each a thin call into ``Db``."""
