"""The account of a curation: for each ranked candidate, its score broken into the signals
that made it, what packing did with it and what it cost.

Pure, like the ranking and packing it explains, so the numbers a person reads in the
inspector are the ones ``curate()`` decided with, not a re-computation that could drift.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

import attrs

from tulving.domain.curated import CandidateReport
from tulving.domain.entry import MemoryEntry
from tulving.domain.packing import Packed, TokenCounter, render_full_line
from tulving.domain.ranking import Ranked

#: Candidates explained per curation: the pool can hold 600, a person reads the head.
MAX_EXPLAINED = 200
PREVIEW_CHARS = 160


def explain(
    ranked: Sequence[Ranked],
    packed: Packed,
    tokenizer: TokenCounter,
    *,
    now: datetime,
    clean: Callable[[MemoryEntry], str],
    section: str = "relevant",
    limit: int = MAX_EXPLAINED,
) -> list[CandidateReport]:
    """One report per candidate in rank order (at most ``limit``). A shown candidate costs
    its rendered line plus the newline before it; a left-out one is priced at its full line,
    so a reader sees how much more budget it would have taken."""
    shown = {item.entry_id: item for item in packed.included}
    duplicates = set(packed.duplicate_ids)
    reports = []
    for item in ranked[:limit]:
        entry = item.entry
        text = clean(entry)
        inclusion = shown.get(entry.id)
        if inclusion is not None:
            disclosure, reason = inclusion.disclosure.value, None
            tokens = tokenizer.count("\n" + inclusion.line)
        else:
            disclosure = "left out"
            reason = "near-duplicate" if entry.id in duplicates else "over budget"
            tokens = tokenizer.count("\n" + render_full_line(_with_text(entry, text), now))
        sig = item.signals
        preview = " ".join(text.split())
        if len(preview) > PREVIEW_CHARS:
            preview = preview[: PREVIEW_CHARS - 1] + "…"
        reports.append(CandidateReport(
            entry.id, entry.type.value, entry.key, preview, round(item.score, 6),
            round(item.relevance, 6), round(sig.recency, 6), round(sig.importance, 6),
            round(sig.frequency, 6), round(sig.type_prior, 6), round(sig.trust, 6),
            disclosure, reason, tokens, section))
    return reports


def _with_text(entry: MemoryEntry, text: str) -> MemoryEntry:
    return entry if text == entry.content else attrs.evolve(entry, content=text)
