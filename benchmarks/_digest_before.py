"""The no-LLM session digest of the release before (every turn under ``Activity:``), kept
to measure the new one against it (``summaries_locomo.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from tulving.domain.entry import MemoryEntry
from tulving.domain.extraction_rules import digest_line
from tulving.domain.records import SessionRecord
from tulving.domain.types import MemoryType

MAX_SUMMARY_CHARS = 2_000


def digest_before(record: SessionRecord, entries: Sequence[MemoryEntry]) -> str:
    start = record.started_at.strftime("%Y-%m-%d %H:%M")
    parts = [f"Session summary, started {start} UTC: {len(entries)} memories."]
    order = [("Decisions", (MemoryType.DECISION,), 400, True),
             ("Known", (MemoryType.FACT, MemoryType.PREFERENCE), 200, False),
             ("Plans and procedures", (MemoryType.PLAN, MemoryType.PROCEDURE), 200, False),
             ("Activity", (MemoryType.OBSERVATION, MemoryType.EPISODE), 160, False)]
    for title, types, width, quote in order:
        items = [e for e in entries if e.type in types]
        if not items:
            continue
        parts.append(f"{title}:")
        for e in items:
            line = (f'- "{digest_line(e.content, width)}"' if quote
                    else f"- {digest_line(e.content, width)}")
            if sum(len(p) + 1 for p in parts) + len(line) > MAX_SUMMARY_CHARS:
                return "\n".join(parts)
            parts.append(line)
    return "\n".join(parts)
