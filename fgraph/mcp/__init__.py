"""The MCP server: each tool declared once (the spec table) and registered through the SDK's public
API, its body a thin call into ``Db``; the resources; the vetted stdio wire."""
