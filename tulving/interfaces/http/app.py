"""``create_app``: the ASGI app of the memory server.

Moving parts: ``tenancy`` (tokens bound to tenants, one ``Memory.view`` per tenant and
agent over the one store the server owns), ``routes`` (the endpoints), ``errors`` (typed
JSON errors), and here the request-size limit and the lifespan that closes everything.
Blocking library calls run on worker threads (at most ``concurrency`` at once); the
Memory serializes writes itself, so many readers run in parallel while a write goes on.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tulving.interfaces.auth.bearer_tokens import TokenRegistry, registry_for
from tulving.interfaces.http import errors
from tulving.interfaces.http.api_docs import include_api_docs
from tulving.interfaces.http.auth_gate import refuse_unknown_token
from tulving.interfaces.http.drain import Drain
from tulving.interfaces.http.errors import body as error_body
from tulving.interfaces.http.inspector import include_inspector
from tulving.interfaces.http.limits import (
    DEFAULT_TIMEOUT,
    MAX_BODY,
    MAX_BUNDLE,
    Limits,
)
from tulving.interfaces.http.observability import (
    ObservabilityOptions,
    fastapi_telemetry_off,
)
from tulving.interfaces.http.observability import install as install_observability
from tulving.interfaces.http.path_ids import PathIds
from tulving.interfaces.http.routes import include_routes
from tulving.interfaces.http.schemas import SCHEMA_VERSION
from tulving.interfaces.http.tenancy import Tenancy

if TYPE_CHECKING:
    from tulving.application.memory import Memory


class BodyLimit:
    """413 for a body over the limit, by its declared length or as it streams in."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app, self.limits = app, limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.body_limit(scope["path"])
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _too_large(send, limit)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await _too_large(send, limit)


class _TooLarge(Exception):
    pass


async def _too_large(send: Send, limit: int) -> None:
    import json

    payload = json.dumps(error_body("PayloadTooLarge",
                                    f"the request body is over {limit} bytes")).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


def create_app(
    memory: Memory,
    *,
    registry: TokenRegistry | None = None,
    concurrency: int = 8,
    timeout: float = DEFAULT_TIMEOUT,
    max_body: int = MAX_BODY,
    max_bundle: int = MAX_BUNDLE,
    sync_dir: str | None = None,
    limits: Limits | None = None,
    observability: ObservabilityOptions | None = None,
) -> FastAPI:
    """The server for ``memory`` (an unopened or open ``Memory``; the app owns it and
    closes it on shutdown). Tokens come from ``registry`` (default: the store's own, as
    ``tulving serve token create`` writes them). ``/v1/sync`` is served when the store
    keeps a sync log (``tulving.ports.storage.SyncLog``: SQLite, PostgreSQL, in memory);
    a sync log left as files by an older server (``sync_dir``, default ``<store>.sync``
    beside a file store) is moved into the store first (see ``legacy_delta_log``).
    ``limits`` bounds each request (see ``limits``); ``timeout``, ``max_body`` and
    ``max_bundle`` are its older spelling and apply when it is not given.
    ``observability``: request ids, spans, ``/metrics`` and access log lines (see
    ``observability``; default: all on, ``/metrics`` for this machine only)."""
    if limits is None:
        limits = Limits(timeout=timeout, max_body=max_body, max_bundle=max_bundle)
    tenancy_box: dict[str, Tenancy] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        tenancy = tenancy_box["t"]
        import anyio.to_thread

        await anyio.to_thread.run_sync(tenancy.close)

    app = FastAPI(title="Tulving memory server", version=str(SCHEMA_VERSION),
                  openapi_url="/v1/openapi.json", docs_url=None, redoc_url=None,
                  lifespan=lifespan, **fastapi_telemetry_off())
    memory.startup()
    tenancy = Tenancy(memory, registry or registry_for(memory), limiter=concurrency)
    tenancy_box["t"] = tenancy
    app.state.tenancy = tenancy
    errors.install(app, before_body_error=refuse_unknown_token)
    include_routes(app, tenancy, limits=limits, version=SCHEMA_VERSION)
    include_inspector(app)
    include_api_docs(app)
    if memory.operator.keeps_sync_log():
        from tulving.interfaces.http.sync_routes import include_sync_routes

        location = str(getattr(memory, "location", "") or "")
        if sync_dir is None and location and "://" not in location and location != ":memory:":
            sync_dir = location + ".sync"
        if sync_dir is not None and os.path.isdir(sync_dir):
            from tulving.interfaces.http.legacy_delta_log import migrate

            migrate(memory, sync_dir, tenancy.registry)
        include_sync_routes(app, tenancy, timeout=limits.timeout, version=SCHEMA_VERSION)
    app.add_middleware(BodyLimit, limits=limits)
    app.add_middleware(PathIds)  # ids read from the raw path, before routing
    app.state.draining = False  # set by `tulving serve` when told to stop (see drain)
    app.add_middleware(Drain, state=app.state)
    install_observability(app, tenancy, observability or ObservabilityOptions())  # outermost
    return app
