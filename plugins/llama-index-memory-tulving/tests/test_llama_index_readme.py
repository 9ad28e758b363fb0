"""The README's quick start runs as written, offline, on Tulving's default local model,
and prints what the README says (the dates in curated labels are the day it runs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tulving.testing.markdown import fenced_blocks

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def _blocks() -> list[tuple[str, str, bool]]:
    """(language, text, marked skip) of each fenced block, in order."""
    return [(b.lang, b.text, b.skipped) for b in fenced_blocks(PLUGIN_ROOT / "README.md")]


def test_the_quick_start_prints_what_the_readme_says(tmp_path: Path) -> None:
    blocks = _blocks()
    runnable = [i for i, (lang, _, skip) in enumerate(blocks) if lang == "python" and not skip]
    assert len(runnable) == 1
    code, (lang, expected, _) = blocks[runnable[0]][1], blocks[runnable[0] + 1]
    assert lang == ""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(PLUGIN_ROOT), os.environ.get("PYTHONPATH", "")]),
        "TULVING_PLUGINS": "tulving,tulving-memory", "HF_HUB_OFFLINE": "1", "NO_PROXY": "*"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert DATE.sub("YYYY-MM-DD", done.stdout) == DATE.sub("YYYY-MM-DD", expected)
