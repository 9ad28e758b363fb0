"""``stats()``: counts by type and tag, the adapters in use, and the store's own figures."""

from __future__ import annotations

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.enrichment import EnrichmentReport
from tulving.domain.memory_reports import LLMStats, LLMUsage, StatsReport, VectorsInUse
from tulving.domain.query import EntryFilter
from tulving.domain.types import ArchiveReason, MemoryType


def store_stats(ctx: MemoryContext, llm: LLMUsage, jobs_pending: int,
                enrichment: EnrichmentReport) -> StatsReport:
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
        enrichment=enrichment,
    )
