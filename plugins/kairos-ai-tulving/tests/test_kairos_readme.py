"""The README's quick start runs as written, offline, on Tulving's default local model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tulving.testing.markdown import fenced_blocks

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def _blocks(language: str) -> list[str]:
    """The README's fenced blocks opened with ``language`` ("" for a bare fence)."""
    return [b.text for b in fenced_blocks(PLUGIN_ROOT / "README.md") if b.lang == language]


def test_the_quick_start_prints_what_the_readme_says(tmp_path: Path) -> None:
    example = _blocks("python")[0]
    expected = next(b for b in _blocks("") if b.startswith("For '"))
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_ROOT), "TULVING_PLUGINS": "tulving",
           "HF_HUB_OFFLINE": "1", "NO_PROXY": "*"}
    done = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == expected
    assert (tmp_path / "kairos-demo.db").exists()
