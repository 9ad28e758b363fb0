"""What the OpenAPI document says each route may answer besides its result.

The document is the contract a generated client or a fuzzer holds the server to: every
status a route can answer is listed with the typed error body it carries
(``{"error": {"type", "message"}}``), so none comes as a surprise. Each route names the
families that apply to it (``READ``, ``WRITE``, ``BY_ID``, ...); the statuses mean what
docs/server/index.md says: 401 no or a dead token, 403 another tenant named or a
read-only token writing, 404 no such memory (or another tenant's), 408 a body that
stopped arriving, 409 a state that refuses the call (a read-only server, a session
already active), 413 over a limit, 422 invalid input, 503 busy or past ``--timeout``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tulving.interfaces.http.schemas import SCHEMA_VERSION

_WHY = {
    401: "no bearer token, or one the store does not know",
    403: "another tenant or agent named, or a read-only token asked to write",
    404: "no such memory for this tenant (another tenant's answers alike)",
    408: "the request body stopped arriving",
    409: "the memory's state refuses the call (a read-only server, a session already "
         "active, an integrity check)",
    413: "over a limit of the server (the message names the option)",
    422: "invalid input: a body, a parameter or a value outside its grammar",
    503: "the store is busy, or the call passed serve --timeout (nothing was written)",
}


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorAnswer(BaseModel):
    """Every error the server answers: its type and a redacted message."""

    schema_version: int = SCHEMA_VERSION
    error: ErrorDetail


def answers(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route for ``statuses``, each with the error body."""
    return {status: {"model": ErrorAnswer, "description": _WHY[status]}
            for status in sorted(statuses)}


#: Every route with a token: a stranger, another tenant, bad input, a busy store.
READ = (401, 403, 408, 422, 503)
#: A route naming one memory by id or key.
BY_ID = (*READ, 404)
#: A route that writes: over a limit, or refused by the memory's state.
WRITE = (*READ, 409, 413)
#: A route whose body is read whole before anything else (JSON): over 4 MiB is a 413.
BODY = (*READ, 413)


def content(media_type: str, what: str, *, text: bool = False) -> dict[str, Any]:
    """A 200 answer that is not JSON: its media type, as bytes (or ``text``)."""
    schema = {"type": "string"} if text else {"type": "string", "format": "binary"}
    return {"description": what, "content": {media_type: {"schema": schema}}}


def upload(media_type: str, what: str,
           schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """``openapi_extra`` of a route that reads its body itself: the body it takes (bytes,
    unless ``schema`` says what JSON document it is)."""
    return {"requestBody": {"required": True, "description": what, "content": {
        media_type: {"schema": schema or {"type": "string", "format": "binary"}}}}}
