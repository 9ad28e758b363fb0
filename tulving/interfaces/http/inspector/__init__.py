"""The memory inspector at ``/ui``: static pages that call the ``/v1`` API with the
visitor's own token, so tenancy, redaction and read-only tokens apply to it exactly as to
any client. Nothing here reads the store; the assets ship in the wheel and load nothing
from elsewhere (the Content-Security-Policy says so to the browser)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"
#: Same-origin scripts, styles and API calls only; no framing (clickjacking of the
#: forget button), no inline script.
POLICY = (b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
          b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")


class _Assets(StaticFiles):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      (b"content-security-policy", POLICY),
                                      (b"x-content-type-options", b"nosniff"),
                                      (b"referrer-policy", b"no-referrer"),
                                      (b"cache-control", b"no-cache")]
            await send(message)
        await super().__call__(scope, receive, with_policy)


def include_inspector(app: FastAPI) -> None:
    """Serve the inspector at ``/ui/`` (and send ``/ui`` there)."""

    @app.get("/ui", include_in_schema=False)
    async def to_inspector() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=308)

    app.mount("/ui", _Assets(directory=STATIC, html=True), name="inspector")
