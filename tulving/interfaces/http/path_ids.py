"""Ids and keys in URL paths: decoded once, from the path as sent, before routing.

``/v1/memory/{memory_id}`` (with ``/history`` and ``/audit``) and ``/v1/forget/{memory_id}``
take an id or a key, and a key may hold ``/`` (``deploy/day``). An ASGI server hands the
router the path already percent-decoded, so an id a client sent encoded as one segment
(``x%2Fhistory``, ``a%2F..%2F..%2Fkeys``) arrived as several, and could name another
route: the history of ``x`` instead of the memory ``x/history``. ``PathIds`` reads the id
from the raw path instead, where ``%2F`` is still part of a segment:

- the last raw segment ``history`` or ``audit`` (a literal ``/``) names the sub-resource;
- the raw segments before it are the id, each decoded, joined by ``/`` (so ``deploy/day``
  sent with a literal slash, as older clients and ``curl`` do, is the key it was);
- the route then sees the id as one segment of its own encoding, which the route's path
  convertor (``memory_id``) decodes, so no id, whatever it holds, reaches another
  handler. An id outside the grammar (``..``, ``?x=``, ``#``, ``%2F``, bytes that are not
  UTF-8) is refused there by the route's pattern (``grammars.KEY_OR_ID``): 422
  ``ValidationError``, before the handler runs, after the token is checked (a caller
  without a live token gets 401, as for any invalid request).
"""

from __future__ import annotations

from urllib.parse import quote, unquote_to_bytes

from starlette.convertors import Convertor, register_url_convertor
from starlette.types import ASGIApp, Receive, Scope, Send

#: Path prefixes whose next segments are an id or key, and the sub-resources after it.
ID_ROUTES: dict[bytes, frozenset[bytes]] = {
    b"/v1/memory/": frozenset({b"history", b"audit"}),
    b"/v1/forget/": frozenset(),
}
#: The path convertor of an id in a route: ``/v1/memory/{memory_id:memory_id}``.
CONVERTOR = "memory_id"


class MemoryIdConvertor(Convertor[str]):
    """One segment as ``PathIds`` wrote it, decoded back to the id or key."""

    regex = "[^/]*"  # an empty id too: the route refuses it (422), not the router (404)

    def convert(self, value: str) -> str:
        return unquote_to_bytes(value).decode("utf-8", "replace")

    def to_string(self, value: str) -> str:
        return quote(value, safe="")


register_url_convertor(CONVERTOR, MemoryIdConvertor())


def rewritten(raw: bytes) -> bytes | None:
    """The path with its id as one encoded segment, or None when it names no id route."""
    for prefix, subresources in ID_ROUTES.items():
        if not raw.startswith(prefix):
            continue
        segments = raw[len(prefix):].split(b"/")
        tail = b""
        if len(segments) > 1 and segments[-1] in subresources:
            tail = b"/" + segments.pop()
        decoded = b"/".join(unquote_to_bytes(s) for s in segments)
        # undecodable bytes stay bytes, percent-encoded: the pattern refuses the id
        return prefix + quote(decoded, safe="").encode("ascii") + tail
    return None


class PathIds:
    """ASGI middleware: see the module's docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
            path = rewritten(raw.split(b"?", 1)[0])
            if path is not None:  # in place: the router notes its route in this scope,
                scope.update(raw_path=path, path=path.decode("ascii"))  # the log reads it
        await self.app(scope, receive, send)
