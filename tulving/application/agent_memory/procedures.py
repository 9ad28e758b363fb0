"""Procedural memory: procedures that learn from outcomes, and the session's working memory.

Why outcomes: a procedure that keeps failing should sink below one that works, whatever
their wording. ``record_outcome`` counts results on the entry itself (``success_count``,
``failure_count``); ``procedures(query)`` ranks relevant PROCEDURE entries by an equal blend
of search relevance (normalised to the best hit) and ``effectiveness`` (Laplace-smoothed
success rate, ``tulving.domain.effectiveness``).

Working memory (seed 004) is the active session's most recent entries, bounded by
``limit``; curation includes it first.
"""

from __future__ import annotations

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.effectiveness import effectiveness
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.query import EntryFilter, SearchResult
from tulving.domain.types import MemoryType

RELEVANCE_WEIGHT = 0.5
MAX_WORKING_MEMORY = 200


def with_outcome(entry: MemoryEntry, success: object, ctx: MemoryContext) -> MemoryEntry:
    if not isinstance(success, bool):
        raise ValidationError("success must be True or False")
    if entry.type is not MemoryType.PROCEDURE:
        raise ValidationError(f"outcomes are recorded on PROCEDURE entries, not {entry.type.value}")
    return attrs.evolve(
        entry,
        success_count=entry.success_count + (1 if success else 0),
        failure_count=entry.failure_count + (0 if success else 1),
        updated_at=ctx.clock.now(),
    )


def rank_procedures(results: list[SearchResult], top_k: int) -> list[SearchResult]:
    if not results:
        return []
    best = max(r.score for r in results) or 1.0
    ranked = [
        SearchResult(
            r.entry,
            RELEVANCE_WEIGHT * (r.score / best) + (1 - RELEVANCE_WEIGHT) * effectiveness(r.entry),
            r.match_type,
        )
        for r in results
    ]
    ranked.sort(key=lambda r: r.score, reverse=True)
    return ranked[:top_k]


def working_memory(ctx: MemoryContext, session_id: str | None, limit: int) -> list[MemoryEntry]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_WORKING_MEMORY:
        raise ValidationError(f"limit must be an integer in 1..{MAX_WORKING_MEMORY}")
    if session_id is None:
        return []
    flt = EntryFilter(partitions=ctx.visible_partitions(), session_id=session_id)
    recent = ctx.storage.query(flt, limit=limit, newest_first=True)
    return [e for e in reversed(recent) if e.type is not MemoryType.SUMMARY]
