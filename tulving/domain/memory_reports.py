"""The reports a ``Memory`` returns and a server's clients return alike: the same class
on both sides of the wire (``memory.stats()`` and ``TulvingClient.stats()`` are both a
``StatsReport``), made by the application's services and read back from the server's
JSON by the clients (``tulving.client.results``), whose ``as_dict()`` is that JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import attrs

from tulving.domain.enrichment import EnrichmentReport
from tulving.domain.entry import MemoryEntry
from tulving.domain.reports import Report


def _set(report: Report) -> dict[str, object]:
    """``as_dict()`` without the fields that are None (not set yet)."""
    return {k: v for k, v in Report.as_dict(report).items() if v is not None}


@attrs.frozen
class LLMUsage(Report):
    """What the LLM was used for so far: its model (None: no LLM), calls and tokens, what
    is left of the call and token budgets (None: unlimited or no LLM), and how often a
    feature took its deterministic path instead (``fallbacks``) or a call failed."""

    model: str | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    budget_calls_left: int | None
    budget_tokens_left: int | None
    fallbacks: int
    failures: int


@attrs.frozen
class VectorsInUse(Report):
    """The vector index: its adapter's name and how many vectors it holds."""

    adapter: str
    count: int


@attrs.frozen
class LLMStats(LLMUsage):
    """``LLMUsage`` with this agent's ``remember(wait=False)`` jobs not run yet."""

    jobs_pending: int = 0


@attrs.frozen
class StatsReport(Report):
    """``stats()``: who this Memory is, its active entries (by type, by tag) and archived
    ones, the storage engine's own figures (``storage``: engine, path, bytes, ... as the
    adapter reports them), the embedder's model id, the vector index, the tokenizer's
    name, the LLM's use, the current session and the enrichment backlog."""

    agent_id: str
    user_id: str | None
    workspace_id: str | None
    active: int
    archived: int
    by_type: Mapping[str, int]
    tags: Mapping[str, int]
    storage: Mapping[str, object]
    embedder: str | None
    vectors: VectorsInUse | None
    tokenizer: str | None
    llm: LLMStats
    session_id: str | None
    #: What derives from the writes so far and has not been written yet (vectors a write
    #: deferred, extraction, ...), per kind: ``wait_enriched()`` waits for it.
    enrichment: EnrichmentReport = attrs.field(factory=EnrichmentReport)


@attrs.frozen
class ProfileItem(Report):
    """One thing known about the subject: the entry's id, content and value, whether
    another entry disputes it, since when it holds (its ``valid_from``), its type,
    whether it is pinned, and its evidence: how many times it was said (``evidence``,
    restatements included) and when last (``last_seen``, None if said once)."""

    id: str
    content: str
    value: str | None
    disputed: bool
    since: datetime
    type: str | None = None
    pinned: bool = False
    evidence: int = 1
    last_seen: datetime | None = None

    def as_dict(self) -> dict[str, object]:
        out = super().as_dict()
        if self.type is None:
            del out["type"]
        return out


@attrs.frozen
class Profile(Report):
    """``profile(subject)``: everything known about the subject, in the order a
    personalising agent reads it (``items``: pinned, preferences, facts, the rest; each
    with its id and date), the same by attribute for structured facts and preferences
    (``facts``, ``preferences``: the newest of each), the items that have no attribute or
    another type (``other``), the ids of every item, and all of it as a text for a prompt
    (one line each, with type, date and id)."""

    subject: str
    facts: Mapping[str, ProfileItem]
    preferences: Mapping[str, ProfileItem]
    other: tuple[ProfileItem, ...]
    entry_ids: tuple[str, ...]
    text: str
    items: tuple[ProfileItem, ...] = ()


@attrs.frozen
class MergePlan(Report):
    """One cluster of near-duplicates: its type, its members' ids, the merged text and
    how it was made (``llm`` or ``keep-newest``); ``merged_id`` once applied."""

    type: str
    ids: tuple[str, ...]
    proposed: str
    method: str
    merged_id: str | None = None

    def as_dict(self) -> dict[str, object]:
        return _set(self)


@attrs.frozen
class LiftedKnowledge(Report):
    """A fact or preference recurring episodes state, lifted into semantic memory: its
    type, content, structured fact when the rules found one, the episodes it comes from,
    and the new entry's ``id`` once applied."""

    type: str
    content: str
    source_entry_ids: tuple[str, ...]
    entity: str | None = None
    attribute: str | None = None
    value: str | None = None
    id: str | None = None

    def as_dict(self) -> dict[str, object]:
        return _set(self)


@attrs.frozen
class ConsolidationReport(Report):
    """``consolidate``: the clusters merged (or, with ``dry_run``, to merge) at cosine
    ``threshold``, the knowledge lifted from recurring episodes, and how many entries
    were archived into merged ones."""

    dry_run: bool
    threshold: float
    clusters: tuple[MergePlan, ...]
    semantic: tuple[LiftedKnowledge, ...]
    archived: int


#: What a write did, as ``store(..., report=True)`` says it (from the write-time decision).
OUTCOMES = {"add": "added", "reinforce": "reinforced", "update": "updated",
            "invalidate": "replaced", "noop": "unchanged", "conflict": "disputed"}


@attrs.frozen
class StoreReport(Report):
    """``store(..., report=True)``: the entry that holds the memory now and what the
    write did (``outcome``): ``added`` (a new entry), ``reinforced`` (it restated an
    existing preference or fact: that entry, its evidence counted once more, no row
    added), ``updated`` (a rewording that supersedes the old entry), ``replaced`` (a new
    value of a structured fact: the old one superseded), ``unchanged`` (an exact
    restatement that changes nothing), ``disputed`` (stored, and flagged with what it
    contradicts); ``superseded`` is the id of the entry archived by it, if any."""

    entry: MemoryEntry
    outcome: str
    superseded: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"outcome": self.outcome, "superseded": self.superseded}
