"""Each plugin's tests run from its own install: every package they import is the plugin's
own, the standard library, a dependency of the plugin, or in its ``test`` extra (issue 41:
the LangGraph plugin's tests imported hypothesis, which its ``test`` extra lacked)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists())
#: Distribution name -> the top-level module it installs, where they differ.
MODULE_OF = {"tulving-memory": "tulving", "openai-agents": "agents",
             "llama-index-core": "llama_index", "kairos-ai": "kairos", "google-adk": "google",
             "pydantic-ai-slim": "pydantic_ai"}


def _imports(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def _modules(requirements: list[str]) -> set[str]:
    names = {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0] for r in requirements}
    return {MODULE_OF.get(n, n.replace("-", "_")) for n in names}


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_the_test_extra_covers_what_the_tests_import(plugin: Path) -> None:
    project = tomllib.loads((plugin / "pyproject.toml").read_text())["project"]
    provided = _modules(project["dependencies"]) | _modules(
        project.get("optional-dependencies", {}).get("test", []))
    local = {p.stem for p in (plugin / "tests").glob("*.py")}
    own = {p.name for p in plugin.iterdir() if p.is_dir() and p.name != "tests"}
    missing = {m for m in _imports(plugin / "tests")
               if m not in sys.stdlib_module_names and m not in local | own | provided
               and m != "__future__"}
    assert not missing, f"{plugin.name}: tests import {sorted(missing)}, not in its test extra"
