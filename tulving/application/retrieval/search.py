"""Search: key, lexical, semantic and hybrid retrieval over one Memory's visible entries.

Filters never lose recall: the vector index is over-fetched and post-filtered, and when
too few visible candidates survive the index is queried again with an explicit
allow-list of matching ids (see ``VectorIndex.query``). Archived entries never surface.

Hybrid retrieval is plain rank fusion plus a few general, cheap refinements, each one
measured on LoCoMo by ``benchmarks/locomo.py --ablation`` and kept only because it
raised recall there (see :class:`SearchOptions` for what each does and why).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.warnings_once import warn_once
from tulving.application.retrieval import calibration, features, ranker
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.refine import (
    add_neighbours,
    fold_derived_hits,
    read_candidates,
    refine,
)
from tulving.application.retrieval.strong import StrongTier
from tulving.domain import rerank, strong_fusion
from tulving.domain.entry import Brief, MemoryEntry
from tulving.domain.entry_factory import check_time
from tulving.domain.errors import ValidationError
from tulving.domain.fusion import blend, normalise, rrf
from tulving.domain.hygiene import echoes, same_text
from tulving.domain.lexical import query_terms
from tulving.domain.query import EntryFilter, ScoredId, SearchResult, entry_matches
from tulving.domain.query_analysis import analyse
from tulving.domain.query_expansion import Expansion
from tulving.domain.tool_items import hidden_tags
from tulving.domain.types import MemoryType
from tulving.domain.validation import check_tags

MODES = ("hybrid", "semantic", "lexical", "key")
MAX_TOP_K = 1000
MAX_QUERY_CHARS = 10_000
#: Hits asked beyond ``top_k`` so that leaving out copies and the question's own turn
#: (``domain.hygiene``) still returns ``top_k`` when the store has them.
HYGIENE_SLACK = 10


def check_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(f"query is over {MAX_QUERY_CHARS} characters")
    return query


def check_min_score(min_score: object) -> float | None:
    """``None``, or a number in [0, 1] (search scores live there in every mode)."""
    if min_score is None:
        return None
    if (isinstance(min_score, bool) or not isinstance(min_score, int | float)
            or not math.isfinite(min_score) or not 0.0 <= min_score <= 1.0):
        raise ValidationError(f"min_score must be a number in [0, 1], got {min_score!r}")
    return float(min_score)


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
    *,
    recall: bool = False,
) -> EntryFilter:
    """The filter of a read on behalf of ``ctx``'s identity; ``recall`` (search, curate,
    the briefing) also leaves out tool items unless ``tags`` names their tag
    (:mod:`tulving.domain.tool_items`)."""
    if isinstance(types, str | MemoryType):
        types = [types]
    checked = check_tags(tags) if tags else None
    return EntryFilter(
        partitions=ctx.visible_partitions(),
        types=tuple(MemoryType.parse(t) for t in types) if types else None,
        tags=checked,
        without_tags=hidden_tags(checked) if recall else None,
        since=check_time("since", since),
        until=check_time("until", until),
        as_of=check_time("as_of", as_of),
    )


#: Threads that run lexical queries beside vector queries (per Searcher, started lazily).
LEXICAL_WORKERS = 4
#: Below this many indexed entries the full-text query takes well under a millisecond and
#: handing it to a thread costs more than it saves (measured on one LoCoMo conversation,
#: 600 turns: +0.4 ms; at 10k entries: -0.3 ms; at 100k: -1.7 ms).
PARALLEL_FROM = 5_000
#: Query vectors a Searcher keeps (see ``Searcher.query_vector``).
QUERY_VECTORS_KEPT = 16


Expander = Callable[[str], Expansion | None]


class Searcher:
    def __init__(self, ctx: MemoryContext, options: SearchOptions | None = None,
                 expander: Expander | None = None, strong: StrongTier | None = None) -> None:
        self.ctx = ctx
        self.options = options or SearchOptions()
        self.expander = expander
        #: the strong tier (a second encoder re-scoring the best candidates), or None
        self.strong = strong
        self._workers: ThreadPoolExecutor | None = None
        # The last few query vectors: search embeds its query once for the candidates
        # and reads it again for each hit's similarity (a local query costs ~7 ms).
        self._query_vectors: dict[str, Any] = {}

    def query_vector(self, query: str) -> Any:
        """``embedder.embed_query(query)``, remembered for the next few queries."""
        assert self.ctx.embedder is not None
        cached = self._query_vectors.get(query)
        if cached is None:
            cached = self.ctx.embedder.embed_query(query)
            if len(self._query_vectors) >= QUERY_VECTORS_KEPT:
                self._query_vectors.pop(next(iter(self._query_vectors)), None)
            self._query_vectors[query] = cached
        return cached

    def close(self) -> None:
        """Stop the lexical worker threads (they hold no state worth keeping)."""
        workers, self._workers = self._workers, None
        if workers is not None:
            workers.shutdown(wait=True)

    # candidate lists ---------------------------------------------------------------
    def lexical(self, query: str, flt: EntryFilter, limit: int) -> list[ScoredId]:
        return self.ctx.storage.lexical_search(query_terms(query), flt, limit)

    def semantic(self, query: str, flt: EntryFilter, limit: int) -> list[ScoredId]:
        ctx = self.ctx
        if ctx.embedder is None or ctx.vectors is None:
            return []
        return self.semantic_by_vector(self.query_vector(query), flt, limit)

    def semantic_by_vector(self, vector: Any, flt: EntryFilter, limit: int) -> list[ScoredId]:
        """Nearest visible entries to ``vector``; filters never lose recall.

        The index holds every active entry of the store, so hits are checked against the
        filter. A filter that only asks for this identity's active entries usually keeps
        nearly every hit: the index is asked for a few more than ``limit`` first, then
        for many more, and only then (a selective filter) with an explicit allow-list.
        """
        ctx = self.ctx
        assert ctx.vectors is not None
        if flt.as_of is not None:
            return self._semantic_exact(vector, flt, limit)
        first = limit + max(4, limit // 4) if flt.identity_only else max(limit * 3, 50)
        for fetch in (first, max(first * 4, 200)):
            hits = ctx.vectors.query(vector, fetch)
            kept = self._visible(hits, flt)
            if len(kept) >= limit or len(hits) < fetch:
                return kept[:limit]
        allow = ctx.storage.ids_matching(flt)
        return ctx.vectors.query(vector, limit, allow=allow)

    def candidate_lists(
        self, query: str, flt: EntryFilter, pool: int,
        loaded: dict[str, MemoryEntry] | None = None,
        briefs: dict[str, Brief] | None = None,
        lexical_pool: int | None = None,
    ) -> tuple[list[ScoredId], list[ScoredId]]:
        """The lexical and the semantic candidates, ``pool`` of each (``lexical_pool``
        lexical ones when given).

        When the storage runs reads concurrently, the lexical query runs on a worker
        thread beside the vector query: SQLite leaves the interpreter lock while it
        computes bm25, so on two cores the engines overlap (measured at 100k entries: the
        two lists in 4.9 ms at the median against 6.4 ms one after the other). If the
        full-text query is still running when the vector hits are in, the entries the
        second stage (:func:`refine`) will look at among them are read meanwhile (into
        ``briefs`` if given, else whole into ``loaded``; measured 1 ms off hybrid search
        at 100k entries).
        """
        ctx = self.ctx
        if (ctx.embedder is None or ctx.vectors is None
                or not ctx.storage.capabilities.concurrent_reads
                or ctx.vectors.count() < PARALLEL_FROM):
            return (self.lexical(query, flt, lexical_pool or pool),
                    self.semantic(query, flt, pool))
        if self._workers is None:
            self._workers = ThreadPoolExecutor(LEXICAL_WORKERS,
                                               thread_name_prefix="tulving-lexical")
        # The query is embedded first: a local model's single-query session uses every
        # core, and sharing them with the full-text query slowed both.
        vector = self.query_vector(query)
        lexical = self._workers.submit(self.lexical, query, flt, lexical_pool or pool)
        try:
            semantic = self.semantic_by_vector(vector, flt, pool)
            if (self.options.refines and not lexical.done()
                    and (loaded is not None or briefs is not None)):
                read_candidates(ctx, [h.id for h in semantic[: self.options.rerank_depth]],
                                loaded, briefs)
        except BaseException:
            if not lexical.cancel():
                lexical.exception()  # wait for it: nothing is left running unobserved
            raise
        return lexical.result(), semantic

    def _visible(self, hits: list[ScoredId], flt: EntryFilter) -> list[ScoredId]:
        """Hits that pass ``flt``, checked by id in storage (no entry is loaded)."""
        if not hits:
            return []
        ids = tuple(h.id for h in hits)
        visible = self.ctx.storage.ids_matching(attrs.evolve(flt, ids=ids))
        return [h for h in hits if h.id in visible]

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
        prefixed = storage.query(attrs.evolve(flt, key_prefix=query.strip()), limit=limit)
        seen = {h.id for h in hits}
        hits += [ScoredId(e.id, 0.9) for e in sorted(prefixed, key=lambda e: e.key or "")
                 if e.id not in seen]
        return hits[:limit]

    def hybrid(
        self, query: str, flt: EntryFilter, limit: int,
        loaded: dict[str, MemoryEntry] | None = None, pool: int | None = None,
        whole: bool = True,
    ) -> list[ScoredId]:
        """Fused and refined candidates; each engine contributes ``max(pool or 2 * limit,
        options.pool)``, and score fusion scales each list over its first
        ``options.pool`` whatever the depth, so a deeper request changes what is added at
        the bottom, not the order at the top. The candidates the second stage reads are
        read whole into ``loaded`` (curate ranks them all), or with ``whole=False`` only
        as briefs (search, which returns the best few)."""
        opts = self.options
        pool = max(pool or limit * 2, opts.pool)
        briefs: dict[str, Brief] | None = None if whole else {}
        expansion = self.expander(query) if self.expander is not None else None
        if opts.ranker == "learned" and expansion is None:
            fused = self._learned(query, flt, pool, loaded, briefs)
            return self._diversified(fused, loaded, briefs)[:limit]
        lists = list(self.candidate_lists(query, flt, pool, loaded, briefs))
        weights = [opts.lexical_weight, opts.semantic_weight]
        if expansion is not None:
            self._add_expansion(query, expansion, flt, pool, lists, weights)
        if opts.fusion == "score":
            fused = blend(lists, weights, depth=opts.pool)
        else:
            fused = rrf(lists, weights, k=opts.rrf_k)
        if opts.refines and fused:
            fused = refine(self.ctx, analyse(query), fused, opts, loaded, flt, briefs)
        if opts.neighbour_share and fused:
            fused = add_neighbours(self.ctx, flt, fused, opts.neighbour_share,
                                   opts.neighbour_depth)
        if opts.calibrated and fused:
            fused = self.calibrated(query, fused, loaded, briefs)
        return self._diversified(fused, loaded, briefs)[:limit]

    def strong_cosines(self, query: str, ids: Sequence[str],
                       loaded: dict[str, MemoryEntry] | None = None,
                       briefs: dict[str, Brief] | None = None) -> dict[str, float]:
        """The strong tier's cosine of ``query`` with each of ``ids`` (best first; the
        ones without a stored strong vector are encoded now, ``strong_compute`` at most)."""
        if self.strong is None or not ids:
            return {}
        read = read_candidates(self.ctx, list(ids), loaded, briefs)
        known = {**(loaded or {}), **(briefs or {}), **{b.id: b for b in read}}
        texts = {i: known[i].content for i in ids if i in known}
        return self.strong.cosines(query, texts, self.options.strong_compute)

    def calibrated(self, query: str, fused: list[ScoredId],
                   loaded: dict[str, MemoryEntry] | None = None,
                   briefs: dict[str, Brief] | None = None) -> list[ScoredId]:
        """The fused list with probabilities for scores (``domain.strong_fusion``): the
        head re-scored with the strong tier's cosines when there is one, else with the
        fast encoder's best cosine (the fused order kept)."""
        opts = self.options
        head = [h.id for h in fused[: opts.strong_depth]]
        if self.strong is not None:
            cosines = self.strong_cosines(query, head, loaded, briefs)
            return strong_fusion.calibrated(fused, cosines, calibration.STRONG,
                                            opts.strong_depth)
        cosines = self.similarities(query, head)
        return strong_fusion.calibrated(fused, cosines, calibration.FAST, opts.strong_depth)

    def _diversified(
        self, fused: list[ScoredId], loaded: dict[str, MemoryEntry] | None,
        briefs: dict[str, Brief] | None,
    ) -> list[ScoredId]:
        opts = self.options
        if opts.mmr >= 1.0 or not fused:
            return fused
        head = [h.id for h in fused[: opts.rerank_depth]]
        read = read_candidates(self.ctx, head, loaded, briefs)
        known = {**(loaded or {}), **(briefs or {}), **{b.id: b for b in read}}
        texts = {i: known[i].content for i in head if i in known}
        return rerank.diversified(fused, texts, opts.mmr, opts.rerank_depth)

    # the learned ranker ----------------------------------------------------------------
    def ranker_pool(
        self, query: str, flt: EntryFilter, pool: int,
        loaded: dict[str, MemoryEntry] | None = None,
        briefs: dict[str, Brief] | None = None,
    ) -> features.Pool:
        """The learned ranker's candidates and their feature rows: both engines'
        ``pool`` best (the lexical engine's ``lexical_pool`` at least), fused by score
        fusion, which picks the ``ranker_neighbour_depth`` best, and the entries written
        just before and after those. The candidates are read
        whole into ``loaded``, or as briefs into ``briefs`` when that is given. The
        training script dumps exactly these rows (``benchmarks/train_ranker.py``)."""
        opts = self.options
        lexical, semantic = self.candidate_lists(query, flt, pool, loaded, briefs,
                                                 max(pool, opts.lexical_pool))
        fused = blend([lexical, semantic], [opts.lexical_weight, opts.semantic_weight],
                      depth=opts.pool)
        around: dict[str, tuple[str, ...]] = {}
        if opts.ranker_neighbour_depth > 0 and fused:
            around = dict(self.ctx.storage.adjacent(
                [h.id for h in fused[: opts.ranker_neighbour_depth]], flt))
        found = {h.id for h in fused}
        added = list(dict.fromkeys(i for near in around.values() for i in near
                                   if i not in found))
        ids = [h.id for h in fused] + added
        read = read_candidates(self.ctx, ids, loaded, briefs)
        known: dict[str, Brief] = {**(loaded or {}), **(briefs or {}),
                                   **{b.id: b for b in read}}
        # the vector index's scores are the cosines of the stored vectors (an int8 graph
        # rescores its candidates from them): only the other candidates' are computed
        cosines = {h.id: h.score for h in semantic}
        if self.ctx.embedder is not None:
            cosines.update(self.similarities(query, [i for i in ids if i not in cosines]))
        return features.build(query_terms(query), analyse(query), lexical, semantic, fused,
                              added, cosines, known, around, opts.pool, opts.lexical_pool)

    def _learned(
        self, query: str, flt: EntryFilter, pool: int,
        loaded: dict[str, MemoryEntry] | None, briefs: dict[str, Brief] | None,
    ) -> list[ScoredId]:
        """Candidates by the learned ranker's probability of holding the answer. The
        candidates are read as briefs (the rows need their text and event time only),
        whatever ``briefs`` says: the caller reads whole the few it keeps."""
        read: dict[str, Brief] = briefs if briefs is not None else {}
        found = self.ranker_pool(query, flt, pool, loaded, read)
        probabilities = ranker.load(self.options.ranker_model).probabilities(found.matrix)
        scores = {i: float(p) for i, p in zip(found.ids, probabilities, strict=True)}
        if self.options.fold_derived:
            fold_derived_hits(self.ctx, flt, scores, {**(loaded or {}), **read}, [],
                              loaded if briefs is None else None)
        out = [ScoredId(i, s) for i, s in scores.items()]
        out.sort(key=lambda h: (-h.score, h.id))
        return out

    def _add_expansion(
        self, query: str, expansion: Expansion, flt: EntryFilter, pool: int,
        lists: list[list[ScoredId]], weights: list[float],
    ) -> None:
        """The expansion's lexical and dense lists, appended. Only new words search
        lexically: the query's own are searched already. The answer is embedded as a
        memory would be (``embed``, not ``embed_query``): it stands for one."""
        share = self.options.expansion_weight
        asked = set(query_terms(query))
        terms = [t for t in query_terms(" ".join(expansion.keywords)) if t not in asked]
        if terms:
            lists.append(self.ctx.storage.lexical_search(terms, flt, pool))
            weights.append(self.options.lexical_weight * share)
        if expansion.answer and self.ctx.embedder is not None and self.ctx.vectors is not None:
            vector = self.ctx.embedder.embed([expansion.answer])[0]
            lists.append(self.semantic_by_vector(vector, flt, pool))
            weights.append(self.options.semantic_weight * share)

    # the public operation --------------------------------------------------------------
    def ranked_ids(
        self, query: str, mode: str, flt: EntryFilter, limit: int,
        loaded: dict[str, MemoryEntry] | None = None, pool: int | None = None,
        whole: bool = True,
    ) -> list[ScoredId]:
        """Best ids for ``query``; entries read along the way are left in ``loaded``;
        ``pool`` and ``whole`` as for :meth:`hybrid`."""
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
            # cosine is in [-1, 1]; scores are promised in [0, 1] (an opposite vector is
            # as irrelevant as an unrelated one)
            return [ScoredId(h.id, min(1.0, max(0.0, h.score)))
                    for h in self.semantic(query, flt, limit)]
        return self.hybrid(query, flt, limit, loaded, pool, whole)

    def load(
        self, ids: Sequence[str], loaded: dict[str, MemoryEntry] | None = None
    ) -> dict[str, MemoryEntry]:
        """Entries by id, reading from storage only those not already in ``loaded``."""
        found = dict(loaded or {})
        missing = [i for i in ids if i not in found]
        if missing:
            found.update((e.id, e) for e in self.ctx.storage.get_many(missing))
        return found

    def search(
        self, query: str, top_k: int, mode: str, flt: EntryFilter, min_score: float | None,
        *, distinct: bool = True,
    ) -> list[SearchResult]:
        """The ``top_k`` best visible hits; ``distinct`` (the default) leaves out a second
        copy of a hit's text and the question's own turn (``domain.hygiene``); with
        ``distinct=False`` every matching entry is a hit (a store whose items are
        addressed by key, not by text: LangGraph's)."""
        check_query(query)
        check_top_k(top_k)
        min_score = check_min_score(min_score)
        loaded: dict[str, MemoryEntry] = {}
        # a few more than asked: copies and the question's own turn are left out below
        # (deeper requests add hits at the bottom, never reorder the top)
        wanted = min(MAX_TOP_K, top_k + HYGIENE_SLACK)
        hits = self.ranked_ids(query, mode, flt, wanted, loaded, whole=False)
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        kept: list[tuple[ScoredId, MemoryEntry]] = []
        seen: set[str] = set()
        start = 0
        while start < len(hits) and len(kept) < top_k:
            # read only as many as may be returned (more only when some were left out)
            batch = hits[start : start + top_k - len(kept)]
            start += len(batch)
            entries = self.load([h.id for h in batch], loaded)
            for hit in batch:
                entry: MemoryEntry | None = entries.get(hit.id)
                if entry is None or not entry_matches(entry, flt):
                    continue
                if distinct:
                    text = same_text(entry.content)
                    if text in seen or (mode != "key" and echoes(query, entry.content)):
                        continue
                    seen.add(text)
                kept.append((hit, entry))
        effective = mode if mode == "key" or self.ctx.embedder is not None else "lexical"
        similarity = (self.similarities(query, [h.id for h, _ in kept])
                      if effective in ("hybrid", "semantic") else {})
        return [SearchResult(entry=entry, score=hit.score, match_type=effective,
                             similarity=similarity.get(hit.id)) for hit, entry in kept]

    def similarities(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        """The cosine of the query's vector and each entry's stored vector (entries
        without one are left out)."""
        import numpy as np

        if not ids or self.ctx.embedder is None:
            return {}
        vectors = self.ctx.storage.vectors_for(ids)
        if not vectors:
            return {}
        query_vector = np.asarray(self.query_vector(query), dtype=np.float32)
        found = list(vectors)
        # one product for all (a conversion and a dot per entry cost ~10 µs each), in
        # float64: a float32 product's rounding depends on how many rows it has, and the
        # best hits' scores must not depend on how many were asked for
        cosines = (np.stack([vectors[i] for i in found]).astype(np.float64)
                   @ query_vector.astype(np.float64))
        return dict(zip(found, cosines.tolist(), strict=True))
