"""The API reference at ``/v1/docs``: Swagger UI over ``/v1/openapi.json``, served from
this process and nothing else.

FastAPI's built-in page loads Swagger UI from a public CDN: blank on an offline machine,
and a third party's script running with the visitor's token in reach. Here the page and
its initializer ship in the wheel, Swagger UI's own files (a 5.x dist, which reads
OpenAPI 3.1) come from the ``fastapi-offline`` package (installed with the ``server``
extra; only its files are used, not its app), and every response
carries a Content-Security-Policy that allows this origin only, so the browser itself
refuses anything else. Without that package the page says so and points to the OpenAPI
document, which is always served.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"
#: Same origin only: scripts, styles, the OpenAPI fetch and "try it out" calls; data:
#: images for Swagger UI's inline SVG icons; no inline script, no framing.
POLICY = (b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
          b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
HEADERS = [(b"content-security-policy", POLICY), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-cache")]
#: The only Swagger UI files the page needs (the rest of the dist is not served).
ASSETS = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png")


def swagger_ui_dir() -> Path | None:
    """The packaged Swagger UI files, or None when ``fastapi-offline`` is absent."""
    from importlib.util import find_spec

    spec = find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "static"
    return folder if (folder / ASSETS[0]).is_file() else None


class _WithPolicy(StaticFiles):
    """Static files with the docs' security headers, restricted to ``allowed`` names."""

    def __init__(self, *, directory: Path, allowed: tuple[str, ...] | None = None) -> None:
        super().__init__(directory=directory, html=True)
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)
        name = scope.get("path", "").rsplit("/", 1)[-1]
        if self.allowed is not None and name not in self.allowed:
            response = HTMLResponse("not found", status_code=404)
            await response(scope, receive, with_policy)
            return
        await super().__call__(scope, receive, with_policy)


def include_api_docs(app: FastAPI) -> None:
    """Serve the reference at ``/v1/docs/`` (and send ``/v1/docs`` there)."""

    @app.get("/v1/docs", include_in_schema=False)
    async def to_docs() -> RedirectResponse:
        return RedirectResponse("/v1/docs/", status_code=308)

    ui = swagger_ui_dir()
    if ui is not None:
        app.mount("/v1/docs/assets", _WithPolicy(directory=ui, allowed=ASSETS),
                  name="api-docs-assets")
    else:
        @app.get("/v1/docs/assets/{name}", include_in_schema=False)
        async def no_assets(name: str) -> HTMLResponse:
            return HTMLResponse(
                "Swagger UI is not installed (pip install \"tulving-memory[server]\"); "
                '<a href="/v1/openapi.json">the OpenAPI document</a> is.',
                status_code=404, headers={k.decode(): v.decode() for k, v in HEADERS})
    app.mount("/v1/docs", _WithPolicy(directory=STATIC), name="api-docs")
