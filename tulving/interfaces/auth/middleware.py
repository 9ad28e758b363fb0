"""Bearer-token gate for the HTTP transport (an ASGI middleware).

Every HTTP request must carry ``Authorization: Bearer tlv_...`` matching a token created
with ``tulving mcp token create``; anything else gets 401 before it reaches the MCP
session layer. Tokens are checked against their stored salted HMAC on every request, so
a revocation takes effect at once without a restart.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from tulving.domain.errors import TulvingError
from tulving.domain.log_masking import masked_logger

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
log = masked_logger("tulving.mcp.auth")


class BearerAuth:
    def __init__(self, app: ASGIApp, verify: Callable[[str], Awaitable[Any]]) -> None:
        self.app = app
        self.verify = verify

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        record = None
        if token:
            try:
                record = await self.verify(token)
            except TulvingError:
                record = None
        if record is None:
            log.info(
                "refused %s %s: %s",
                scope.get("method"),
                scope.get("path"),
                "bad token" if token else "no token",
            )
            await _unauthorized(send)
            return
        scope.setdefault("state", {})["tulving_token"] = getattr(record, "name", "?")
        await self.app(scope, receive, send)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            text = value.decode("latin-1").strip()
            scheme, _, credential = text.partition(" ")
            if scheme.lower() == "bearer" and credential.strip():
                return credential.strip()
    return None


async def _unauthorized(send: Send) -> None:
    body = json.dumps(
        {
            "error": "unauthorized",
            "message": "a valid bearer token is required "
            "(create one with `tulving mcp token create NAME`)",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="tulving"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
