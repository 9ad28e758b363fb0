"""``/v1/docs`` works offline: the page and every asset it names come from the server
itself, under a Content-Security-Policy that allows this origin only (issue 34, finding 7:
it used to load Swagger UI from a public CDN, blank offline, with no CSP)."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

import httpx

from tests.http.conftest import Server

CSP = "content-security-policy"


def _policy(response: httpx.Response) -> dict[str, str]:
    directives = [d.strip() for d in response.headers[CSP].split(";") if d.strip()]
    return {d.split()[0]: " ".join(d.split()[1:]) for d in directives}


def _assert_strict(response: httpx.Response) -> None:
    policy = _policy(response)
    assert policy["default-src"] == "'none'"
    for directive in ("script-src", "style-src", "connect-src"):
        assert policy[directive] == "'self'", (directive, policy)
    assert policy["frame-ancestors"] == "'none'"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_docs_page_names_only_its_own_origin_and_carries_a_strict_csp(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30, follow_redirects=True) as client:
        page = client.get("/v1/docs")
        assert page.status_code == 200, page.text
        assert str(page.url).endswith("/v1/docs/")
        _assert_strict(page)
        html = page.text
        assert "cdn" not in html.lower()
        referenced = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert referenced, html
        for ref in referenced:
            absolute = urljoin(str(page.url), ref)
            assert urlsplit(absolute).netloc == urlsplit(server.url).netloc, ref
            asset = client.get(absolute)
            assert asset.status_code == 200, (ref, asset.status_code)
            if not ref.endswith(".json"):
                _assert_strict(asset)
        script = client.get("/v1/docs/docs.js").text
        assert "../openapi.json" in script and "validatorUrl: null" in script
        assert not re.search(r"https?://", script)
        # only the files the page needs are served from the Swagger UI dist
        assert client.get("/v1/docs/assets/index.html").status_code == 404
        assert client.get("/v1/docs/assets/swagger-ui-bundle.js.map").status_code == 404
        assert client.get("/v1/openapi.json").json()["info"]["title"]
