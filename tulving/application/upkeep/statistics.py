"""``stats()``: counts by type and tag, the adapters in use, and the store's own figures."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.llm_gateway import LLMUsage
from tulving.domain.query import EntryFilter
from tulving.domain.reports import Report
from tulving.domain.types import ArchiveReason, MemoryType


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
    name, the LLM's use and the current session."""

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


def store_stats(ctx: MemoryContext, llm: LLMUsage, jobs_pending: int) -> StatsReport:
    visible = ctx.visible_partitions()
    by_type = {
        t.value: ctx.storage.count(EntryFilter(partitions=visible, types=(t,)))
        for t in MemoryType
    }
    archived = ctx.storage.count(
        EntryFilter(partitions=visible, archive_reasons=tuple(ArchiveReason))
    )
    return StatsReport(
        agent_id=ctx.identity.agent_id,
        user_id=ctx.identity.user_id,
        workspace_id=ctx.identity.workspace_id,
        active=sum(by_type.values()),
        archived=archived,
        by_type=by_type,
        tags=dict(ctx.storage.tag_counts(EntryFilter(partitions=visible))),
        storage=dict(ctx.storage.stats()),
        embedder=ctx.embedder.model_id if ctx.embedder else None,
        vectors=(VectorsInUse(ctx.vectors.name, ctx.vectors.count())
                 if ctx.vectors else None),
        tokenizer=ctx.tokenizer.name if ctx.tokenizer else None,
        llm=LLMStats(**attrs.asdict(llm, recurse=False), jobs_pending=jobs_pending),
        session_id=ctx.session_id,
    )
