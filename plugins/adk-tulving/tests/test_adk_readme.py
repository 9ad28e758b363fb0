"""The README's Python blocks that are not marked ``runner: skip`` run as written, offline
(on Tulving's default local model, the LLM played by the local OpenAI-compatible server),
and print what the README says they print."""

from __future__ import annotations

from pathlib import Path

from tulving.testing.markdown import check_readme_examples

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_examples_print_what_the_readme_says(tmp_path: Path) -> None:
    assert check_readme_examples(PLUGIN_ROOT / "README.md", tmp_path, path=[str(PLUGIN_ROOT)],
                                 env={"ADK_DISABLE_TELEMETRY": "1"})
