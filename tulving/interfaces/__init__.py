"""The driving side: CLI, MCP server. Calls the application layer only."""
