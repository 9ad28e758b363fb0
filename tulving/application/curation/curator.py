"""Curation: the memories that matter, packed into a budget that is never exceeded.

``query`` mode ranks a candidate pool from hybrid retrieval with the domain's composite
score (relevance first, bounded boosts from recency, decayed importance, frequency, trust
and type) and packs it with progressive disclosure. ``orient`` mode needs no query: it
briefs a cold-started agent (``tulving.application.curation.briefing``): what is known
about the user, pinned memories, decisions in force, active plans, procedures that
worked, the last sessions' summaries, recent turns only with what is left, then keys.

Redaction happens *inside* packing (``pack(clean=shown_text)``: secret shapes, and all of a memory stored under a
credential-named key such as ``db/password``), before a memory is measured,
so masks are counted in the budget, and only for the memories packing looks at; the
entries returned in ``CuratedContext.entries`` are redacted too. Entries held for review
(untrusted content) never reach curated text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tulving.application.curation.briefing import SECTIONS, Briefing
from tulving.application.curation.options import CurationOptions
from tulving.application.curation.shown import curatable, key_shown, redacted, shown_text
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.telemetry import in_span
from tulving.application.retrieval.search import Searcher, check_query
from tulving.domain.curated import CandidateReport, CuratedContext, CuratedEntry
from tulving.domain.curation_report import explain as explain_packing
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, ValidationError
from tulving.domain.hygiene import echoes
from tulving.domain.packing import Packed, pack, render_full_line
from tulving.domain.passages import excerpt
from tulving.domain.query import EntryFilter, ScoredId
from tulving.domain.question_parts import question_parts
from tulving.domain.ranking import Candidate, RankingWeights, rank, spread_events

MODES = ("query", "orient")
MAX_BUDGET = 1_000_000
#: Candidate pool: first sized for memories of about 24 tokens, widened (at most to one
#: candidate per 8 tokens) when the memories found are shorter; see
#: ``Curator._candidates``.
MIN_POOL, MAX_POOL, TOKENS_PER_CANDIDATE, MIN_TOKENS_PER_CANDIDATE = 60, 600, 24, 8
#: A pool is widened when it holds less than POOL_TRIGGER times what fits in full, to
#: POOL_MARGIN times that.
POOL_TRIGGER, POOL_MARGIN = 1.25, 2.0
#: Candidates whose rendered lines are measured to estimate what fits in the budget.
POOL_SAMPLE = 8

#: Orient sections: (name, heading, weight); see ``tulving.application.curation.briefing``.
ORIENT_SECTIONS: tuple[tuple[str, str, float], ...] = tuple(
    (s.name, s.heading, s.weight) for s in SECTIONS)


def check_budget(token_budget: object) -> int:
    if isinstance(token_budget, bool) or not isinstance(token_budget, int):
        raise ValidationError(f"token_budget must be an int, got {token_budget!r}")
    if token_budget < 0:
        raise ValidationError(f"token_budget must be >= 0, got {token_budget}")
    if token_budget > MAX_BUDGET:
        raise ValidationError(f"token_budget must be <= {MAX_BUDGET}")
    return token_budget


class Curator:
    def __init__(self, ctx: MemoryContext, searcher: Searcher,
                 options: CurationOptions | None = None) -> None:
        self.ctx = ctx
        self.searcher = searcher
        self.options = options or CurationOptions()
        #: Entries put first in query mode (the active session's working memory).
        self.working_memory: Callable[[], Sequence[MemoryEntry]] | None = None

    @property
    def tokenizer(self) -> Any:
        if self.ctx.tokenizer is None:
            raise ConfigError("curate needs a tokenizer; configure tokenizer='cl100k_base'")
        return self.ctx.tokenizer

    def curate(
        self,
        query: str | None,
        token_budget: int,
        mode: str | None,
        flt: EntryFilter,
        weights: RankingWeights | str | dict[str, Any] | None = None,
        *,
        explain: bool = False,
    ) -> CuratedContext:
        """``explain`` adds a report per ranked candidate (``CuratedContext.candidates``):
        the score's signals, the disclosure packing chose and the token cost."""
        if not isinstance(explain, bool):
            raise ValidationError("explain must be True or False")
        budget = check_budget(token_budget)
        if mode is None:  # no mode named: a query asks, no query is the briefing
            mode = "query" if query is not None else "orient"
        if mode not in MODES:
            raise ValidationError(f"unknown curate mode {mode!r}; use 'query' or 'orient'")
        chosen = RankingWeights.resolve(weights)
        if mode == "orient" or query is None:
            if mode == "query":
                raise ValidationError("curate(mode='query') needs a query; use mode='orient'")
            return self._orient(budget, flt, chosen, explain)
        return self._query(check_query(query), budget, flt, chosen, explain)

    # query mode -----------------------------------------------------------------------
    def _query(
        self, query: str, budget: int, flt: EntryFilter, weights: RankingWeights,
        explain: bool,
    ) -> CuratedContext:
        now = self.ctx.clock.now()
        hits, entries = self._candidates(query, budget, flt)
        # Past the head that search folds, a fact read off a turn in the pool would spend
        # budget on what the turn says anyway.
        pooled = {h.id for h in hits}
        hits = [h for h in hits
                if h.id not in entries or entries[h.id].derived_from not in pooled]
        # Boosted retrieval scores may exceed 1: scale by the best instead of clipping,
        # which would tie the top candidates and hand their order to the other signals.
        # The learned ranker's probabilities are scaled by the best too: a pool whose best
        # is 0.1 would otherwise let recency and importance, bounded boosts meant for
        # close calls, outweigh relevance (curate() packs what the query has, however
        # sure the ranker is that it answers).
        top = max((h.score for h in hits), default=1.0)
        relative = self.searcher.options.ranker == "learned" and top > 0.0
        scale = 1.0 / top if top > 1.0 or relative else 1.0
        candidates = [
            Candidate(key_shown(entries[h.id]), min(1.0, max(0.0, h.score * scale)))
            for h in hits
            if h.id in entries and curatable(entries[h.id])
            and not echoes(query, entries[h.id].content)
        ]
        if self.working_memory is not None:
            # The active session's recent entries come first, whatever the query.
            hidden = set(flt.without_tags or ())  # tool items, unless the call asked
            recent = [e for e in self.working_memory()
                      if curatable(e) and not hidden.intersection(e.tags)]
            first = {e.id for e in recent}
            candidates = [Candidate(key_shown(e), 1.0) for e in recent] + [
                c for c in candidates if c.entry.id not in first
            ]
            entries.update({e.id: e for e in recent})
        ranked = rank(candidates, now, weights)
        opts = self.options
        if opts.session_decay < 1.0:
            ranked = spread_events(ranked, opts.session_decay)
        asked = question_parts(query)
        packed = in_span("curate.pack", pack)(ranked, budget=budget, tokenizer=self.tokenizer,
                      header="## Memory", now=now, clean=shown_text,
                      excerpt=(lambda text: excerpt(text, asked, opts.excerpt_chars,
                                                    choice=opts.passages))
                      if opts.excerpts else None,
                      excerpt_share=opts.excerpt_share,
                      duplicate_threshold=opts.duplicate_threshold)
        report = (tuple(explain_packing(ranked, packed, self.tokenizer, now=now,
                                        clean=shown_text)) if explain else ())
        return self._result(packed, {r.id: r.entry for r in ranked}, budget, len(hits),
                            "query", query, {r.id: r.score for r in ranked}, report)

    def _candidates(
        self, query: str, budget: int, flt: EntryFilter
    ) -> tuple[list[ScoredId], dict[str, MemoryEntry]]:
        """A ranked pool big enough to fill ``budget``, and its entries.

        The pool first assumes memories of ``TOKENS_PER_CANDIDATE`` tokens. When the lines
        of the best ``POOL_SAMPLE`` candidates, measured as rendered, are shorter, so that
        the budget holds more than the pool offers with ``POOL_TRIGGER`` to spare,
        retrieval runs again for ``POOL_MARGIN`` times what fits (at most one candidate
        per ``MIN_TOKENS_PER_CANDIDATE`` tokens). Every candidate costs engine work, a
        read, a ranking and maybe a measure, so the common case pays for the pool it uses
        and only short memories pay for a second round (measured: one larger retrieval up
        front was slower at 100k entries).
        """
        size = min(MAX_POOL, max(MIN_POOL, budget // TOKENS_PER_CANDIDATE))
        most = min(MAX_POOL, max(size, budget // MIN_TOKENS_PER_CANDIDATE))
        loaded: dict[str, MemoryEntry] = {}
        ranked = self.searcher.ranked_ids(query, "hybrid", flt, size, loaded, pool=size)
        entries = self.searcher.load([h.id for h in ranked], loaded)
        if len(ranked) >= size and entries and size < most:
            # What a line costs, measured on a few of the best candidates as rendered.
            sample = [entries[h.id] for h in ranked[:POOL_SAMPLE] if h.id in entries]
            now = self.ctx.clock.now()
            line_tokens = sum(
                self.tokenizer.count(render_full_line(e, now)) + 1 for e in sample
            ) / max(1, len(sample))
            fits = budget / max(1.0, line_tokens)
            if fits * POOL_TRIGGER > size:
                wider = min(most, int(POOL_MARGIN * fits))
                ranked = self.searcher.ranked_ids(query, "hybrid", flt, wider, entries,
                                                  pool=wider)
                entries = self.searcher.load([h.id for h in ranked], entries)
        return ranked, entries

    # orient mode ----------------------------------------------------------------------
    def _orient(
        self, budget: int, flt: EntryFilter, weights: RankingWeights, explain: bool
    ) -> CuratedContext:
        return Briefing(self.ctx, self.tokenizer).build(budget, flt, weights, explain)

    # shared ---------------------------------------------------------------------------
    def _result(
        self, packed: Packed, entries: dict[str, MemoryEntry], budget: int, consulted: int,
        mode: str, query: str | None, scores: dict[str, float],
        report: tuple[CandidateReport, ...] = (),
    ) -> CuratedContext:
        shown = tuple(
            CuratedEntry(redacted(entries[i.entry_id]), scores[i.entry_id], i.disclosure.value)
            for i in packed.included
        )
        return CuratedContext(packed.content, packed.token_count, budget, shown,
                              packed.omitted, consulted, mode, query, report)
