"""Who may use the HTTP doors: bearer tokens stored hashed (``bearer_tokens``) and the
ASGI gate that checks them (``middleware``), shared by the MCP HTTP transport and the
``/v1`` server."""
