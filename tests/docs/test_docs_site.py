"""The documentation site builds with ``mkdocs build --strict`` and stands on its own.

Strict mode turns every warning into a failure: a link to a page or anchor that does not
exist, a page left out of the navigation, a snippet of the README that moved, a docstring
the API reference cannot resolve. The built site is then checked for what strict mode
does not see: the pages people land on exist (the plugins' and the TypeScript client's
READMEs among them, added by ``scripts/docs_hooks.py``), the API reference carries the
docstrings (``Memory.curate``'s, rendered, not its name alone), and no page loads a
script, a style sheet, a font or an image from another host (the site works offline and
tells no third party who reads it). The blocks of the pages are run by
``test_readme_blocks.py``.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PAGES = [
    "index.html",
    "getting-started/install/index.html",
    "getting-started/quickstart/index.html",
    "library/index.html",
    "library/agent-memory/index.html",
    "cli/index.html",
    "mcp/index.html",
    "server/index.html",
    "server/typescript/index.html",
    "integrations/langgraph/index.html",
    "integrations/kairos/index.html",
    "adapters/index.html",
    "operations/backups/index.html",
    "operations/encryption/index.html",
    "reference/memory/index.html",
    "reference/ports/index.html",
    "reference/contract-tests/index.html",
    "search/search_index.json",
]

# attributes through which a page loads something (a link to another site is fine)
LOADS = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"),
         ("source", "src"), ("video", "src"), ("audio", "src"), ("embed", "src"),
         ("object", "data")}
EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
CSS_URL = re.compile(r"""(?:@import\s+(?:url\()?|url\()\s*['"]?(?P<url>[^'")\s]+)""",
                     re.IGNORECASE)


class Loads(HTMLParser):
    """Every URL a page loads (not the ones it merely links to)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (tag, name) in LOADS:
                if tag == "link" and dict(attrs).get("rel") in ("canonical", "alternate"):
                    continue
                self.urls.append(value)
        style = dict(attrs).get("style")
        if style:
            self.urls += [m.group("url") for m in CSS_URL.finditer(style)]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stderr[-6000:]}"
    return out


def test_the_pages_people_land_on_exist(site: Path) -> None:
    missing = [page for page in PAGES if not (site / page).is_file()]
    assert not missing, missing


def test_the_reference_renders_the_docstrings(site: Path) -> None:
    page = (site / "reference" / "memory" / "index.html").read_text(encoding="utf-8")
    assert 'id="tulving.Memory.curate"' in page
    section = page[page.index('id="tulving.Memory.curate"'):]
    text = html.unescape(re.sub(r"<[^>]+>", "", section[:6000]))
    assert "token_budget" in text and "cold-start briefing" in text, text[:1500]
    ports = (site / "reference" / "ports" / "index.html").read_text(encoding="utf-8")
    assert 'id="tulving.ports.storage.EntryStore"' in ports


def test_no_page_loads_anything_from_another_host(site: Path) -> None:
    found = []
    for path in sorted(site.rglob("*.html")):
        parser = Loads()
        parser.feed(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(site)}: {url}" for url in parser.urls
                  if EXTERNAL.match(url)]
    for path in sorted(site.rglob("*.css")):
        found += [f"{path.relative_to(site)}: {m.group('url')}"
                  for m in CSS_URL.finditer(path.read_text(encoding="utf-8"))
                  if EXTERNAL.match(m.group("url"))]
    assert not found, found[:20]
