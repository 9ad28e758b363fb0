"""The memory server: Tulving's HTTP ``/v1`` API (seed 001's Memory Server).

``create_app(memory, registry=...)`` builds the ASGI app (FastAPI) for any ASGI server;
``tulving serve`` runs it on uvicorn. See ``app`` for the moving parts.
"""

from tulving.interfaces.http.app import create_app
from tulving.interfaces.http.schemas import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "create_app"]
