"""The token check of every ``/v1`` call, run before the request's body is validated.

FastAPI validates a body and reports its faults (422 with the field list) before the
endpoint runs; checking the token only inside the endpoint answered a caller without a
valid token with a description of the API. So a router dependency refuses, before the
body is looked at, a request with no bearer token or with two ``Authorization`` headers
(which one a proxy, the server and a log would each read is not the same, so none is
trusted). Whether a well-formed token is one the store knows is decided where it costs
no extra round trip: inside the request's own read scope, with the call
(``Tenancy.serve``: on PostgreSQL a recall stays one transaction), or, when the body is
invalid, by :func:`refuse_unknown_token` before the 422 is sent. Routes that read their
body themselves (sync) look the token up in the dependency (``lookup=True``), off the
event loop. ``/v1/health`` needs no token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request

from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.http.tenancy import Tenancy

OPEN_PATHS = frozenset({"/v1/health"})


def bearer_header(request: Request) -> str:
    """The request's one ``Authorization`` header, if it carries a bearer token; 401
    otherwise (nothing is read from the store)."""
    given = request.headers.getlist("authorization")
    if len(given) > 1:
        raise HTTPError(401, "Unauthorized",
                        "the request has more than one Authorization header; send one")
    header = given[0] if given else ""
    if not header.lower().startswith("bearer ") or not header[7:].strip():
        raise HTTPError(401, "Unauthorized", "a bearer token is required")
    return header


def authenticated(tenancy: Tenancy, *, lookup: bool = False
                  ) -> Callable[[Request], Awaitable[None]]:
    async def check(request: Request) -> None:
        if request.url.path in OPEN_PATHS:
            return
        header = bearer_header(request)
        request.state.tulving_authorization = header
        if lookup:
            request.state.tulving_token = await tenancy.run(tenancy.verify, header)
    return check


async def refuse_unknown_token(request: Request) -> None:
    """Before a 422 about the body: 401 when the request's token is not a live one (a
    caller without a valid token learns nothing about the API)."""
    header = getattr(request.state, "tulving_authorization", None)
    tenancy = getattr(request.app.state, "tenancy", None)
    if header is None or tenancy is None or hasattr(request.state, "tulving_token"):
        return
    request.state.tulving_token = await tenancy.run(tenancy.verify, header)
