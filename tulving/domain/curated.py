"""What ``curate`` returns: the prompt block and an account of what went into it."""

from __future__ import annotations

import attrs

from tulving.domain.entry import MemoryEntry


@attrs.frozen
class CuratedEntry:
    entry: MemoryEntry
    score: float
    #: "full" (whole text), "truncated" (an oversize best memory, cut with a marker),
    #: "excerpt" (the passage of a long memory that bears on the query, marked with the
    #: memory's id; ``entry`` holds the whole memory) or "index" (a one-line index entry:
    #: key, type, date, first words).
    disclosure: str
    section: str = "relevant"

    @property
    def full(self) -> bool:
        return self.disclosure != "index"


@attrs.frozen
class CandidateReport:
    """Why one candidate was shown, cut short or left out: the inspector's curate preview
    and ``curate(explain=True)`` show where the budget went. ``tokens`` is what its line
    cost in the block (for a left-out candidate: what its full line would have cost)."""

    entry_id: str
    type: str
    key: str | None
    preview: str
    score: float
    relevance: float
    recency: float
    importance: float
    frequency: float
    type_prior: float
    trust: float
    #: "full", "truncated", "excerpt", "index", or "left out".
    disclosure: str
    #: Why a candidate was left out: "near-duplicate" or "over budget"; None when shown.
    reason: str | None
    tokens: int
    section: str = "relevant"


@attrs.frozen
class CuratedContext:
    content: str
    token_count: int
    token_budget: int
    entries: tuple[CuratedEntry, ...]
    #: Relevant memories that were consulted but left out (over budget or near-duplicate).
    omitted: int
    #: How many candidate memories were considered.
    sources_consulted: int
    mode: str = "query"
    query: str | None = None
    #: Every ranked candidate with its score broken down (only with ``explain=True``).
    candidates: tuple[CandidateReport, ...] = ()

    @property
    def budget_remaining(self) -> int:
        return self.token_budget - self.token_count

    def __str__(self) -> str:
        return self.content
