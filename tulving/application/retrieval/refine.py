"""The reads of search's second stage; the score rules themselves are pure domain
functions in :mod:`tulving.domain.rerank`.

The second stage looks at the ~50 best fused candidates (one batched read, as briefs when
only the best few are returned), at the sources of derived candidates, and at the entries
written just before and after the best hits (``Storage.adjacent``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tulving.application.plumbing.context import MemoryContext
from tulving.application.retrieval.options import SearchOptions
from tulving.domain import rerank
from tulving.domain.entry import Brief, MemoryEntry
from tulving.domain.query import EntryFilter, ScoredId, entry_matches
from tulving.domain.query_analysis import QueryAnalysis
from tulving.ports.storage import BriefReader


def refine(
    ctx: MemoryContext,
    analysis: QueryAnalysis,
    fused: list[ScoredId],
    opts: SearchOptions,
    loaded: dict[str, MemoryEntry] | None = None,
    flt: EntryFilter | None = None,
    briefs: dict[str, Brief] | None = None,
) -> list[ScoredId]:
    """Adjusted scores, best first. Candidates not in ``loaded`` are read whole into it,
    or, when ``briefs`` is given (search, which returns only the best few), read as
    briefs into that instead."""
    head, tail = fused[: opts.rerank_depth], fused[opts.rerank_depth :]
    entries: dict[str, Brief] = {**(loaded or {}), **(briefs or {})}
    entries.update((b.id, b) for b in read_candidates(ctx, [h.id for h in head], loaded, briefs))
    rules = opts.rerank_rules.for_query(analysis)
    scores = rerank.rescore(head, entries, analysis, rules)
    if opts.fold_derived:
        fold_derived_hits(ctx, flt, scores, entries, tail,
                          loaded if briefs is None else None)
    return rerank.scaled(scores, rules.ceiling, tail)


def read_candidates(
    ctx: MemoryContext,
    entry_ids: Sequence[str],
    loaded: dict[str, MemoryEntry] | None,
    briefs: dict[str, Brief] | None,
) -> Sequence[Brief]:
    """Read the candidates among ``entry_ids`` not read yet: as briefs into ``briefs``
    when it is given (through the adapter's optional ``BriefReader``, else from whole
    entries), else whole into ``loaded``. Returns what it read."""
    missing = [i for i in entry_ids
               if not (loaded and i in loaded) and not (briefs and i in briefs)]
    if not missing:
        return []
    if briefs is not None:
        storage = ctx.storage
        found: Sequence[Brief] = (storage.get_briefs(missing)
                                  if isinstance(storage, BriefReader)
                                  else storage.get_many(missing))
        briefs.update((b.id, b) for b in found)
        return found
    whole = ctx.storage.get_many(missing)
    if loaded is not None:
        loaded.update((e.id, e) for e in whole)
    return whole


def fold_derived_hits(
    ctx: MemoryContext,
    flt: EntryFilter | None,
    scores: dict[str, float],
    entries: dict[str, Brief],
    tail: Sequence[ScoredId],
    loaded: dict[str, MemoryEntry] | None,
) -> None:
    """Read the sources of derived candidates that are not candidates themselves (and
    pass the filter), then fold (:func:`tulving.domain.rerank.fold_derived`). Changes
    ``scores`` in place; the sources read go into ``loaded`` when it is given."""
    derived = rerank.derived_sources(scores, entries)
    if not derived:
        return
    in_tail = {h.id for h in tail}
    unknown = [s for s in derived.values() if s not in scores and s not in in_tail]
    if unknown:
        found = [e for e in ctx.storage.get_many(unknown) if flt is None or entry_matches(e, flt)]
        entries.update((e.id, e) for e in found)
        if loaded is not None:
            loaded.update((e.id, e) for e in found)
    rerank.fold_derived(scores, derived, in_tail | entries.keys())


def add_neighbours(
    ctx: MemoryContext, flt: EntryFilter, fused: list[ScoredId], share: float, depth: int
) -> list[ScoredId]:
    """Bring the neighbours of the ``depth`` best hits along
    (:func:`tulving.domain.rerank.lift_neighbours`), read in one ``Storage.adjacent``."""
    if not share or depth <= 0 or not fused:
        return fused
    around = ctx.storage.adjacent([h.id for h in fused[:depth]], flt)
    # a neighbour read off a hit (a fact of that turn) is the hit again: fold's rule
    lifted = sorted({n for ids in around.values() for n in ids})
    if lifted:
        of_hit = {e.id for e in ctx.storage.get_many(lifted) if e.derived_from in around}
        around = {i: tuple(n for n in ids if n not in of_hit) for i, ids in around.items()}
    return rerank.lift_neighbours(fused, around, share, depth)
