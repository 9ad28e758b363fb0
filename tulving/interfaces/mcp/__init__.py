"""Tulving as an MCP server (``tulving mcp`` or ``python -m tulving.interfaces.mcp``)."""
