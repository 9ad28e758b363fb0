"""A text is shown once in a briefing: what another section already showed is not shown
again, whether it comes back as the same memory or as a near-identical one.

Why by text and not only by id: the same thing reaches a store more than once (a
preference stored by the agent and restated in a session's summary, a decision quoted in
the summary of the session that made it); the id rule keeps one memory in one section, the
text rule keeps one statement in one briefing. A multi-line memory (a session summary)
loses only the lines that repeat, and keeps the rest.
"""

from __future__ import annotations

import re

import attrs

from tulving.domain.entry import MemoryEntry
from tulving.domain.ranking import Ranked
from tulving.domain.similarity import NearDuplicateIndex

_BULLET = re.compile(r'^\s*(?:[-*•]\s*)?(?:\[[^\]]*\]\s*)?"?(.*?)"?\s*$')


def _statement(line: str) -> str:
    """A line as the statement it makes: without its bullet, label and quotes."""
    match = _BULLET.match(line)
    return match.group(1) if match else line


def remember_shown(shown: NearDuplicateIndex, entry: MemoryEntry) -> None:
    """Add what ``entry`` shows (each line of it) to ``shown``."""
    shown.add(entry.id, entry.content)
    for n, line in enumerate(entry.content.splitlines()):
        text = _statement(line)
        if text:
            shown.add(f"{entry.id}#{n}", text)


def not_shown_again(items: list[Ranked], shown: NearDuplicateIndex) -> list[Ranked]:
    """``items`` without those ``shown`` holds already; a multi-line one without its lines
    that ``shown`` holds (left out if nothing of it is new)."""
    out: list[Ranked] = []
    for item in items:
        entry = item.entry
        if shown.find(entry.content) is not None or shown.find(_statement(entry.content)):
            continue
        lines = entry.content.splitlines()
        if len(lines) > 1:
            kept = _without_empty_titles(
                [line for line in lines
                 if not _statement(line) or shown.find(_statement(line)) is None], lines)
            if len(kept) < len(lines):
                if not any(_statement(line) for line in kept[1:]):
                    continue  # only the summary's header line would be left
                item = attrs.evolve(item, entry=attrs.evolve(entry, content="\n".join(kept)))
        out.append(item)
    return out


def _without_empty_titles(kept: list[str], lines: list[str]) -> list[str]:
    """``kept`` without a title line ("Known:") none of whose items is left."""
    dropped = len(kept) < len(lines)
    out: list[str] = []
    for n, line in enumerate(kept):
        if dropped and n > 0 and line.rstrip().endswith(":"):
            following = kept[n + 1] if n + 1 < len(kept) else ""
            if not following.lstrip().startswith("- "):
                continue
        out.append(line)
    return out
