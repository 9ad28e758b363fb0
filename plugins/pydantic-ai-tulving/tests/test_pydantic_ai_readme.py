"""The README's Python blocks that are not marked ``runner: skip`` run as written, offline
(on Tulving's default local model, the LLM played by the local OpenAI-compatible server),
and print what the README says they print."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tulving.testing.markdown import fenced_blocks

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_examples_print_what_the_readme_says(tmp_path: Path) -> None:
    blocks = [(b.lang, b.text, b.skipped) for b in fenced_blocks(PLUGIN_ROOT / "README.md")]
    runnable = [i for i, (lang, _, skip) in enumerate(blocks) if lang == "python" and not skip]
    assert runnable, "the README has no runnable example"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(PLUGIN_ROOT), os.environ.get("PYTHONPATH", "")]),
        "TULVING_PLUGINS": "tulving,tulving-memory", "HF_HUB_OFFLINE": "1", "NO_PROXY": "*",
        "PYDANTIC_AI_DISABLE_TELEMETRY": "1"}
    for i in runnable:
        code, (lang, expected, _) = blocks[i][1], blocks[i + 1]
        assert lang == "", "each runnable example is followed by what it prints"
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout == expected
