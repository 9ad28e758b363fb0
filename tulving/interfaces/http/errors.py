"""Typed JSON errors: ``{"error": {"type", "message"}}`` with a status that says whose
fault it was, never a stack trace (the message is redacted like every other emission)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from tulving.application.plumbing import telemetry
from tulving.application.plumbing.rule_set_source import redact
from tulving.domain import errors as E
from tulving.domain.log_masking import masked_logger
from tulving.interfaces.http.schemas import SCHEMA_VERSION

log = masked_logger("tulving.http")

#: Most specific first: the first class an error is an instance of decides its status.
STATUS: tuple[tuple[type[Exception], int], ...] = (
    (E.NotFoundError, 404),
    (E.StateConflict, 409),  # well formed, refused by the memory's state now
    (E.ContentError, 422),
    (E.PolicyViolation, 422),
    (E.ValidationError, 422),
    (E.ScopeError, 403),
    (E.SecurityError, 403),
    (E.LockError, 503),
    (E.DeadlineExceeded, 503),  # past serve --timeout: cancelled, nothing written
    (E.ReadOnlyError, 409),  # a write to `tulving serve --read-only`: not a server fault
    (E.StorageError, 503),
    (E.IntegrityError, 409),
    (E.MemoryStoreError, 409),
    (E.EmbedderError, 503),
    (E.LLMError, 503),
    (E.VectorIndexError, 503),
    (E.ConfigError, 503),
)


class HTTPError(Exception):
    """An error of the HTTP layer itself (auth, size, timeouts)."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def body(kind: str, message: str) -> dict[str, object]:
    # A message may quote input: a lone surrogate in it would make the JSON response
    # itself unencodable (a 500 and a dropped connection), so it is shown escaped.
    shown = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return {"schema_version": SCHEMA_VERSION,
            "error": {"type": kind, "message": redact(shown)[:2000]}}


def as_caller_sees_it(exc: E.TulvingError) -> E.TulvingError:
    """An id of another partition answers exactly as a missing id (status, type, message):
    no token can probe which ids exist elsewhere. The Memory has already queued the
    refusal in the caller's own audit chain."""
    if isinstance(exc, E.NotVisibleError):
        return E.NotFoundError(exc.as_missing)
    return exc


def allowed_methods(request: Request) -> str:
    """The methods of every route matching the request's path: Starlette's router
    answers 405 with the first partial match's alone (``/v1/sync/deltas`` is a GET route
    and a POST route)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "\x00"})
        if match is Match.PARTIAL:
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def status_for(exc: Exception) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def install(app: FastAPI,
            before_body_error: Callable[[Request], Awaitable[None]] | None = None) -> None:
    """The error handlers of ``app``. ``before_body_error`` runs before a 422 about a
    request's body is sent and may refuse the request instead by raising ``HTTPError``
    (the server checks the caller's token there: ``auth_gate``)."""
    @app.exception_handler(E.TulvingError)
    async def tulving_error(_request: Request, exc: E.TulvingError) -> JSONResponse:
        exc = as_caller_sees_it(exc)
        telemetry.note_request("error", type(exc).__name__)
        return JSONResponse(body(type(exc).__name__, str(exc)), status_code=status_for(exc))

    @app.exception_handler(HTTPError)
    async def http_error(_request: Request, exc: HTTPError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        telemetry.note_request("error", exc.kind)  # the access log's error type
        return JSONResponse(body(exc.kind, str(exc)), status_code=exc.status, headers=headers)

    async def unknown_token(request: Request) -> JSONResponse | None:
        """401 instead of a description of the body for a caller whose token is not live
        (see ``auth_gate``)."""
        if before_body_error is None:
            return None
        try:
            await before_body_error(request)
        except HTTPError as refused:
            return await http_error(request, refused)
        return None

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        refused = await unknown_token(request)
        if refused is not None:
            return refused
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg')}"
            for err in exc.errors()[:10])
        telemetry.note_request("error", "ValidationError")
        return JSONResponse(body("ValidationError", problems or "malformed request"),
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def starlette_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and "parsing the body" in str(exc.detail):
            refused = await unknown_token(request)
            if refused is not None:
                return refused
            # FastAPI's answer to a body its JSON parser gave up on (a recursion limit
            # reached by deep nesting, among others): the input's fault, a 422 like any
            # other malformed body
            telemetry.note_request("error", "ValidationError")
            return JSONResponse(body("ValidationError", "the request body is not JSON this "
                                     "server reads (malformed, or nested too deeply)"),
                                status_code=422)
        headers = exc.headers
        if exc.status_code == 405:  # every method the path takes (RFC 9110), not only
            headers = {**(headers or {}), "Allow": allowed_methods(request)}  # one route's
        telemetry.note_request("error", "HTTPError")
        return JSONResponse(body("HTTPError", str(exc.detail)), status_code=exc.status_code,
                            headers=headers)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return JSONResponse(body("InternalError", "the server failed; see its log"),
                            status_code=500)
