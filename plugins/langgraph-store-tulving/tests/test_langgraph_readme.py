"""The README's Python blocks run as written, offline, on Tulving's default local model,
and print what the README says they print."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tulving.testing.markdown import fenced_blocks

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def _blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced block, in order."""
    return [(b.lang, b.text) for b in fenced_blocks(PLUGIN_ROOT / "README.md")]


def _examples() -> list[tuple[str, str]]:
    """Each Python block with the bare block printed right after it."""
    blocks = _blocks()
    return [(code, blocks[i + 1][1]) for i, (lang, code) in enumerate(blocks)
            if lang == "python" and i + 1 < len(blocks) and blocks[i + 1][0] == ""]


@pytest.mark.parametrize("index", range(3))
def test_the_readme_examples_print_what_the_readme_says(tmp_path: Path, index: int) -> None:
    examples = _examples()
    assert len(examples) == 3
    code, expected = examples[index]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(PLUGIN_ROOT), os.environ.get("PYTHONPATH", "")]),
        "TULVING_PLUGINS": "tulving,tulving-memory", "HF_HUB_OFFLINE": "1", "NO_PROXY": "*"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == expected
