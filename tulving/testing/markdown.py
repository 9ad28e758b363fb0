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
