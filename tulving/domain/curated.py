"""What ``curate`` returns: the prompt block and an account of what went into it."""

from __future__ import annotations

import attrs

from tulving.domain.entry import MemoryEntry


@attrs.frozen
class CuratedEntry:
    """A memory shown in a curated block: its score, how much of it is shown
    (``disclosure``) and the section it is in (``relevant``, or an orient-mode section)."""

    entry: MemoryEntry
    score: float
    disclosure: str
    """How much is shown: "full" (the whole text), "truncated" (an oversize best memory,
    cut with a marker), "excerpt" (the passage of a long memory that bears on the query,
    marked with the memory's id; ``entry`` holds the whole memory) or "index" (a one-line
    index entry: key, type, date, first words)."""
    section: str = "relevant"

    @property
    def full(self) -> bool:
        """Whether its text is shown (whole or truncated), not only an index line."""
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
    disclosure: str
    """How much was shown: "full", "truncated", "excerpt", "index", or "left out"."""
    reason: str | None
    """Why a candidate was left out: "near-duplicate" or "over budget"; None when shown."""
    tokens: int
    section: str = "relevant"


@attrs.frozen
class CuratedContext:
    """What ``curate()`` returns: ``content``, the prompt-ready block of at most
    ``token_budget`` tokens (``token_count`` is its exact cost, headers included;
    ``str(ctx)`` is the block), the entries it shows, and an account of what was left out.
    """

    content: str
    """The prompt-ready block."""
    token_count: int
    """What ``content`` costs, counted by the configured tokenizer on the final text."""
    token_budget: int
    """The budget asked for; ``token_count`` never exceeds it."""
    entries: tuple[CuratedEntry, ...]
    """The memories shown, in the order of the block."""
    omitted: int
    """Relevant memories that were consulted but left out (over budget or near-duplicate)."""
    sources_consulted: int
    """How many candidate memories were considered."""
    mode: str = "query"
    """``"query"`` or ``"orient"`` (a cold-start briefing)."""
    query: str | None = None
    candidates: tuple[CandidateReport, ...] = ()
    """Every ranked candidate with its score broken down (only with ``explain=True``)."""

    @property
    def budget_remaining(self) -> int:
        """Tokens of the budget the block did not use."""
        return self.token_budget - self.token_count

    def __str__(self) -> str:
        return self.content
