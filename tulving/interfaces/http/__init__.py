"""The memory server: Tulving's HTTP ``/v1`` API (seed 001's Memory Server).

``create_app(memory, registry=...)`` builds the ASGI app (FastAPI) for any ASGI server;
``tulving serve`` runs it on uvicorn. See ``app`` for the moving parts.
"""

from tulving.interfaces.http.app import SCHEMA_VERSION, create_app

__all__ = ["SCHEMA_VERSION", "create_app"]
