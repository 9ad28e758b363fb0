"""A replica that is told to stop drains first: for a short while it keeps serving, and
every answer says ``Connection: close``.

Behind a proxy that keeps connections to its replicas open (nginx's ``keepalive``), a
replica that closes its idle connections the moment it is told to stop races the proxy:
a request written on such a connection just as it closes is lost, and the proxy answers
502 (it never repeats a ``POST`` already sent, rightly). The door suite's rolling restart
through nginx saw one such 502 in a few runs under load. Draining closes each kept
connection right after an answer on it, at the proxy's own pace, so when the replica
really stops there is nothing idle left to race; a new connection made after that is
refused, which a proxy does hand to the next replica.
"""

from __future__ import annotations

from typing import Any

#: How long ``tulving serve`` drains after SIGTERM/SIGINT before it stops (a second signal
#: stops it at once).
DRAIN_SECONDS = 1.0


class Drain:
    """ASGI middleware: while ``state.draining``, every response closes its connection."""

    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not getattr(self.state, "draining", False):
            await self.app(scope, receive, send)
            return

        async def closing(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, closing)
