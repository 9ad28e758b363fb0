"""The token check of every ``/v1`` call, run before the request's body is read.

FastAPI validates a body and reports its faults (422 with the field list) before the
endpoint runs; checking the token inside the endpoint answered a caller without a valid
token with a description of the API. As a router dependency the check runs first: no
token or a bad one is 401, whatever the body. A request with two ``Authorization``
headers is refused too (401): which one a proxy, the server and a log would each read is
not the same, so none is trusted. ``/v1/health`` needs no token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request

from tulving.interfaces.http.errors import HTTPError
from tulving.interfaces.http.tenancy import Tenancy

OPEN_PATHS = frozenset({"/v1/health"})


def authenticated(tenancy: Tenancy) -> Callable[[Request], Awaitable[None]]:
    async def check(request: Request) -> None:
        if request.url.path in OPEN_PATHS:
            return
        given = request.headers.getlist("authorization")
        if len(given) > 1:
            raise HTTPError(401, "Unauthorized",
                            "the request has more than one Authorization header; send one")
        request.state.tulving_token = tenancy.verify(given[0] if given else None)
    return check
