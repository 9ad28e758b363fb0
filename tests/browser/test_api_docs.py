"""``/v1/docs`` renders in a real browser with every request kept on the server's own
origin (issue 34, finding 7): Swagger UI from the packaged assets, under the page's CSP."""

from __future__ import annotations

from urllib.parse import urlsplit

from playwright.sync_api import Page, Route, expect

from tests.http.conftest import Server


def test_docs_render_offline_under_the_csp(page: Page, server: Server) -> None:
    origin = urlsplit(server.url).netloc
    elsewhere: list[str] = []
    violations: list[str] = []

    def only_here(route: Route) -> None:
        if urlsplit(route.request.url).netloc == origin:
            route.continue_()
        else:  # as on a machine with no network: nothing outside answers
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_here)
    page.on("console", lambda msg: violations.append(msg.text)
            if "Content Security Policy" in msg.text else None)
    page.goto(f"{server.url}/v1/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Tulving memory server")
    expect(page.locator(".opblock-summary-path").filter(has_text="/v1/recall")).to_have_count(1)
    assert elsewhere == []
    assert violations == [], violations
