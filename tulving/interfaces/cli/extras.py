"""Which extra each optional command needs, checked before anything is imported.

A core install (``pip install tulving-memory``) has no MCP, HTTP server or client
packages: ``tulving mcp`` must then say, in one line, which extra to install, rather
than die with a traceback on the first import deep inside a dependency. ``find_spec``
looks a package up without importing it, so the check costs nothing when it passes.
"""

from __future__ import annotations

import importlib.util

from tulving.distribution import missing_extra
from tulving.domain.errors import ConfigError

#: command -> (extra, the top-level modules it imports). Transitive ones (anyio under
#: mcp) are listed when a broken partial install has been seen to miss them.
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mcp": ("mcp", ("mcp", "anyio", "uvicorn", "starlette")),
    "serve": ("server", ("fastapi", "uvicorn", "anyio")),
    "sync": ("client", ("httpx",)),
}


def missing(modules: tuple[str, ...]) -> list[str]:
    """The modules of ``modules`` that cannot be found (none imported)."""
    gone = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            gone.append(name)
    return gone


def require(command: str) -> None:
    """Raise a one-line ConfigError (exit 3) when ``command``'s extra is not installed."""
    extra, modules = COMMANDS[command]
    gone = missing(modules)
    if gone:
        raise ConfigError(missing_extra(f"tulving {command}", extra, ", ".join(gone)))
