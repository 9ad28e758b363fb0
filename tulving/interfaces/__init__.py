"""The driving side: the ``tulving`` CLI and the MCP server, thin layers over ``Memory``.

Nothing here holds business logic: arguments are parsed, handed to the application layer,
and its results rendered (redacted) for a person or an agent.
"""
