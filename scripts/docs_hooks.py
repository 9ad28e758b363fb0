"""MkDocs hooks (``mkdocs.yml``: ``hooks``): pages whose text lives outside ``docs/``.

Each first-party plugin and the TypeScript client keep their README beside their code:
it is what their package index page shows and what their own tests run. The site shows
the same text, added here at build time rather than copied into ``docs/`` (a copy would
drift, and the README runner would run its blocks twice). Links in a README are written
for the repository; the ones that lead to another file of the repository are rewritten
for the page's place in the site (a link into ``docs/`` or to another of these READMEs
becomes a link to that page).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]

#: site page -> the README (relative to the repository root) that is its text
PAGES = {
    "integrations/kairos.md": "plugins/kairos-ai-tulving/README.md",
    "integrations/langgraph.md": "plugins/langgraph-store-tulving/README.md",
    "integrations/openai-agents.md": "plugins/openai-agents-tulving/README.md",
    "integrations/llama-index.md": "plugins/llama-index-memory-tulving/README.md",
    "integrations/adk.md": "plugins/adk-tulving/README.md",
    "integrations/pydantic-ai.md": "plugins/pydantic-ai-tulving/README.md",
    "server/typescript.md": "clients/typescript/README.md",
}

#: a repository file a README may link to -> its page in the site
SITE_PAGES = {"README.md": "index.md", **{readme: page for page, readme in PAGES.items()}}

LINK = re.compile(r"\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)")


def site_text(page: str, readme: str) -> str:
    """The README's text with its links to repository files pointed at site pages."""
    text = (ROOT / readme).read_text(encoding="utf-8")

    def rewrite(match: re.Match[str]) -> str:
        target = match.group("target")
        if "://" in target or target.startswith("mailto:"):
            return match.group(0)
        in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(readme), target))
        if in_repo.startswith("docs/"):
            in_site = in_repo.removeprefix("docs/")
        elif in_repo in SITE_PAGES:
            in_site = SITE_PAGES[in_repo]
        else:
            return match.group(0)  # left as written: --strict reports it if it is broken
        new = posixpath.relpath(in_site, posixpath.dirname(page))
        return f"]({new}{match.group('anchor') or ''})"

    return LINK.sub(rewrite, text)


def on_files(files: Files, config: Any) -> Files:
    for page, readme in PAGES.items():
        files.append(File.generated(config, page, content=site_text(page, readme)))
    return files
