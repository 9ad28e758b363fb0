"""Fenced code blocks of a Markdown file, for tests that run a README's examples.

The project's README runner (``tests/docs/test_readme_blocks.py``) runs every README of the
repository; a plugin package's own tests run its README's example with this when the
package is tested on its own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*runner:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class FencedBlock:
    #: The fence's language ("" for a bare fence, such as printed output).
    lang: str
    text: str
    #: The runner marker on the line right before the fence ("skip: why", "output"...),
    #: or "" when there is none.
    marker: str

    @property
    def skipped(self) -> bool:
        return self.marker.startswith("skip")


def fenced_blocks(path: str | os.PathLike[str]) -> list[FencedBlock]:
    """Every fenced block of the file, in order (fences of three backticks)."""
    blocks: list[FencedBlock] = []
    current: list[str] = []
    opened: str | None = None
    marker = previous = ""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fence = _FENCE.match(line)
            if fence and opened is None:
                opened, current, marker = fence.group(1), [], previous
            elif fence and opened is not None:
                blocks.append(FencedBlock(opened, "".join(current), marker))
                opened = None
            elif opened is not None:
                current.append(line)
            found = _MARKER.match(line) if opened is None else None
            previous = found.group(1) if found else ""
    return blocks


def check_readme_examples(readme: str | os.PathLike[str], cwd: str | os.PathLike[str], *,
                          path: list[str], env: dict[str, str] | None = None,
                          timeout: float = 300) -> int:
    """Run each Python block of ``readme`` not marked ``runner: skip`` in a fresh
    interpreter in ``cwd`` (``path`` first on ``PYTHONPATH``, offline, ``env`` added) and
    assert it prints exactly the bare block that follows it; returns how many ran. What a
    plugin's test of its own README needs, so each package does not keep a copy."""
    import subprocess
    import sys

    blocks = fenced_blocks(readme)
    runnable = [i for i, b in enumerate(blocks) if b.lang == "python" and not b.skipped]
    assert runnable, f"{readme} has no runnable example"
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [*path, os.environ.get("PYTHONPATH", "")]), "TULVING_PLUGINS": "tulving,tulving-memory",
        "HF_HUB_OFFLINE": "1", "NO_PROXY": "*", **(env or {})}
    for i in runnable:
        expected = blocks[i + 1] if i + 1 < len(blocks) else None
        assert expected is not None and expected.lang == "", \
            "each runnable example is followed by what it prints"
        done = subprocess.run([sys.executable, "-c", blocks[i].text], cwd=cwd, env=full,
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout == expected.text
    return len(runnable)
