"""Search: key, lexical, semantic and hybrid retrieval over one Memory's visible entries.

Filters never lose recall: the vector index is over-fetched and post-filtered, and when
too few visible candidates survive the index is queried again with an explicit
allow-list of matching ids (see ``VectorIndex.query``). Archived entries never surface.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tulving.application.context import MemoryContext
from tulving.application.fusion import normalise, rrf
from tulving.application.warnings_once import warn_once
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.lexical import query_terms
from tulving.domain.query import EntryFilter, ScoredId, SearchResult, entry_matches
from tulving.domain.types import MemoryType

MODES = ("hybrid", "semantic", "lexical", "key")
MAX_TOP_K = 1000
MAX_QUERY_CHARS = 10_000


def check_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(f"query is over {MAX_QUERY_CHARS} characters")
    return query


def check_top_k(top_k: object) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise ValidationError(f"top_k must be an integer in 1..{MAX_TOP_K}, got {top_k!r}")
    return top_k


def build_filter(
    ctx: MemoryContext,
    types: Sequence[MemoryType | str] | None = None,
    tags: Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    as_of: datetime | None = None,
) -> EntryFilter:
    from tulving.application.entry_factory import check_time
    from tulving.domain.validation import check_tags

    if isinstance(types, str | MemoryType):
        types = [types]
    return EntryFilter(
        partitions=ctx.visible_partitions(),
        types=tuple(MemoryType.parse(t) for t in types) if types else None,
        tags=check_tags(tags) if tags else None,
        since=check_time("since", since),
        until=check_time("until", until),
        as_of=check_time("as_of", as_of),
    )


import attrs


@attrs.frozen
class SearchOptions:
    @classmethod
    def ablations(cls) -> dict[str, "SearchOptions"]:
        return {}


class Searcher:
    def __init__(self, ctx: MemoryContext, options: SearchOptions | None = None) -> None:
        self.ctx = ctx
        self.options = options or SearchOptions()

    # candidate lists ---------------------------------------------------------------
    def lexical(self, query: str, flt: EntryFilter, limit: int) -> list[ScoredId]:
        return self.ctx.storage.lexical_search(query_terms(query), flt, limit)

    def semantic(self, query: str, flt: EntryFilter, limit: int) -> list[ScoredId]:
        ctx = self.ctx
        if ctx.embedder is None or ctx.vectors is None:
            return []
        vector = ctx.embedder.embed_query(query)
        if flt.as_of is not None:
            return self._semantic_exact(vector, flt, limit)
        fetch = max(limit * 3, 50)
        hits = ctx.vectors.query(vector, fetch)
        kept = self._visible(hits, flt)
        if len(kept) >= limit or len(hits) < fetch:
            return kept[:limit]
        allow = ctx.storage.ids_matching(flt)
        return ctx.vectors.query(vector, limit, allow=allow)

    def _visible(self, hits: list[ScoredId], flt: EntryFilter) -> list[ScoredId]:
        entries = {e.id: e for e in self.ctx.storage.get_many([h.id for h in hits])}
        return [h for h in hits if h.id in entries and entry_matches(entries[h.id], flt)]

    def _semantic_exact(self, vector: object, flt: EntryFilter, limit: int) -> list[ScoredId]:
        """As-of reads include archived entries, which the index does not hold."""
        import numpy as np

        pairs = list(self.ctx.storage.iter_vectors(flt))
        if not pairs:
            return []
        matrix = np.stack([v for _, v in pairs])
        scores = matrix @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:limit]
        return [ScoredId(pairs[i][0], float(scores[i])) for i in order]

    def key(self, query: str, flt: EntryFilter, limit: int) -> list[ScoredId]:
        storage = self.ctx.storage
        exact = storage.active_by_key(flt.partitions or (), query.strip())
        hits = [ScoredId(exact.id, 1.0)] if exact and entry_matches(exact, flt) else []
        prefixed = storage.query(
            EntryFilter(**{**_fields(flt), "key_prefix": query.strip()}), limit=limit
        )
        seen = {h.id for h in hits}
        hits += [ScoredId(e.id, 0.9) for e in sorted(prefixed, key=lambda e: e.key or "")
                 if e.id not in seen]
        return hits[:limit]

    # the public operation --------------------------------------------------------------
    def ranked_ids(self, query: str, mode: str, flt: EntryFilter, limit: int) -> list[ScoredId]:
        if mode not in MODES:
            raise ValidationError(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
        if mode == "key":
            return self.key(query, flt, limit)
        if mode in ("hybrid", "semantic") and self.ctx.embedder is None:
            warn_once("no-embedder", "no embedder configured: search runs lexically only")
            mode = "lexical"
        if mode == "lexical":
            return normalise(self.lexical(query, flt, limit))
        if mode == "semantic":
            return self.semantic(query, flt, limit)
        pool = max(limit * 2, 50)
        return rrf([self.lexical(query, flt, pool), self.semantic(query, flt, pool)])[:limit]

    def search(
        self, query: str, top_k: int, mode: str, flt: EntryFilter, min_score: float | None
    ) -> list[SearchResult]:
        check_query(query)
        check_top_k(top_k)
        hits = self.ranked_ids(query, mode, flt, top_k)
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        entries = {e.id: e for e in self.ctx.storage.get_many([h.id for h in hits])}
        results: list[SearchResult] = []
        effective = mode if mode == "key" or self.ctx.embedder is not None else "lexical"
        for hit in hits:
            entry: MemoryEntry | None = entries.get(hit.id)
            if entry is not None and entry_matches(entry, flt):
                results.append(SearchResult(entry=entry, score=hit.score, match_type=effective))
        return results


def _fields(flt: EntryFilter) -> dict[str, object]:
    import attrs

    return attrs.asdict(flt, recurse=False)
