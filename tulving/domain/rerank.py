"""Second-stage score rules for fused hybrid candidates: pure arithmetic, no reads.

Rank fusion only sees two lists of ids. Looking at the few best candidates themselves adds
what the lists cannot know: whether a candidate names what the query names, whether it
says *when* for a "when" question, whether it was recorded together with another strong
candidate, and which entries were written just before or after a strong hit. Each rule is
a bounded multiplier or a bounded share, so it can reorder close candidates but never
lifts a weak match over a strong one by much; scores stay in [0, 1].

The application reads the candidates (:mod:`tulving.application.retrieval.refine`); the
rules here only see what was read, so each is unit-tested on plain values.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from datetime import datetime

import attrs

from tulving.domain.entry import Brief
from tulving.domain.lexical import words
from tulving.domain.query import ScoredId
from tulving.domain.query_analysis import QueryAnalysis
from tulving.domain.temporal import mentions_relative_time


@attrs.frozen
class RerankRules:
    """The bounded boosts of the second stage (see ``SearchOptions`` for why each).

    - ``entity_boost``: a candidate that mentions the names the query names is multiplied
      by ``1 + entity_boost * (share of names mentioned)``;
    - ``temporal_boost``: for "when" questions, a candidate that places something in time
      is multiplied by ``1 + temporal_boost``;
    - ``context_share``: a candidate gains this share of the best score among the other
      candidates recorded at the same event time.
    """

    entity_boost: float = 0.0
    temporal_boost: float = 0.0
    context_share: float = 0.0

    def for_query(self, analysis: QueryAnalysis) -> RerankRules:
        """The rules that apply to this query: no names, no entity boost; not a "when"
        question, no temporal boost."""
        return attrs.evolve(
            self,
            entity_boost=self.entity_boost if analysis.entities else 0.0,
            temporal_boost=self.temporal_boost if analysis.asks_when else 0.0,
        )

    @property
    def ceiling(self) -> float:
        """The largest factor the rules can apply: dividing by it keeps scores in [0, 1]."""
        return (1.0 + self.entity_boost) * (1.0 + self.temporal_boost) * (1.0 + self.context_share)


def word_set(text: str) -> frozenset[str]:
    """Lower-cased words with possessives split off (``Caroline's`` holds ``caroline``)."""
    return frozenset(part for w in words(text) for part in w.split("'") if part)


def entity_share(entities: Sequence[str], text: str) -> float:
    """The share of ``entities`` (lower-cased names) that ``text`` mentions."""
    if not entities:
        return 0.0
    present = word_set(text)
    return sum(1 for name in entities if name in present) / len(entities)


def boosted(score: float, text: str, analysis: QueryAnalysis, rules: RerankRules) -> float:
    """``score`` with the entity and temporal boosts ``rules`` grant ``text`` (``rules``
    already narrowed to the query by :meth:`RerankRules.for_query`)."""
    if rules.entity_boost:
        score *= 1.0 + rules.entity_boost * entity_share(analysis.entities, text)
    if rules.temporal_boost and mentions_relative_time(text):
        score *= 1.0 + rules.temporal_boost
    return score


def event_context(
    scores: Mapping[str, float], times: Mapping[str, datetime], share: float
) -> dict[str, float]:
    """Add ``share`` of the best *other* score recorded at the same event time: memories
    written together (one conversation session, one task) answer each other."""
    groups: dict[datetime, list[tuple[float, str]]] = {}
    for entry_id, at in times.items():
        groups.setdefault(at, []).append((scores[entry_id], entry_id))
    out = dict(scores)
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(reverse=True)
        (best, best_id), (second, _) = members[0], members[1]
        for score, entry_id in members:
            other = second if entry_id == best_id else best
            out[entry_id] = score + share * other
    return out


def rescore(
    head: Sequence[ScoredId],
    briefs: Mapping[str, Brief],
    analysis: QueryAnalysis,
    rules: RerankRules,
) -> dict[str, float]:
    """Boosted scores of ``head`` (best first), unscaled; a candidate missing from
    ``briefs`` (gone since it was found) keeps its score. ``rules`` as narrowed by
    :meth:`RerankRules.for_query`."""
    scores: dict[str, float] = {}
    times: dict[str, datetime] = {}
    for hit in head:
        score = hit.score
        brief = briefs.get(hit.id)
        if brief is not None:
            times[hit.id] = brief.valid_from
            score = boosted(score, brief.content, analysis, rules)
        scores[hit.id] = score
    if rules.context_share:
        scores = event_context(scores, times, rules.context_share)
    return scores


def derived_sources(scores: Mapping[str, float], briefs: Mapping[str, Brief]) -> dict[str, str]:
    """Candidate id -> the one entry it was derived from, for derived candidates."""
    return {
        entry_id: source
        for entry_id in scores
        if entry_id in briefs and (source := briefs[entry_id].derived_from) is not None
    }


def fold_derived(
    scores: dict[str, float], derived: Mapping[str, str], present: Container[str]
) -> None:
    """A memory derived from exactly one other (a fact the rules read off a conversation
    turn) says less than its source: while the source is a candidate or otherwise
    ``present`` (read and visible), it stands for both at its own rank and the derived
    memory leaves ``scores`` (changed in place), so one piece of evidence takes one
    place. Lifting the source to the derived memory's score measured worse on LoCoMo (14
    evidence turns lost for 7 gained against storing the turns alone; hiding: 9 for 10).
    A derived memory keeps its place when its source is gone or outside the filter."""
    for entry_id, source in derived.items():
        if source in scores or source in present:
            del scores[entry_id]


def scaled(scores: Mapping[str, float], ceiling: float, tail: Sequence[ScoredId]) -> list[ScoredId]:
    """Rescored head best first, then the untouched ``tail``, all divided by ``ceiling``."""
    out = [ScoredId(i, s / ceiling) for i, s in scores.items()]
    out.sort(key=lambda h: (-h.score, h.id))
    return out + [ScoredId(h.id, h.score / ceiling) for h in tail]


def lift_neighbours(
    fused: Sequence[ScoredId], around: Mapping[str, Sequence[str]], share: float, depth: int
) -> list[ScoredId]:
    """The entries written just before or after each of the ``depth`` best hits
    (``around``: hit id -> neighbour ids) score at least ``share`` of that hit's score.

    A conversation's question and its answer, or a step and its result, are separate
    memories; the one that names what the query asks about lifts the one that holds the
    rest. A neighbour is raised to ``share`` of its lender (``max``, not a sum): it joins
    the lender's company without ever passing it, so the best hit stays first (a sum
    measured 11 points of recall@1 lower on LoCoMo for the same coverage).
    """
    scores = {h.id: h.score for h in fused}
    for hit in fused[:depth]:
        for other in around.get(hit.id, ()):
            scores[other] = max(scores.get(other, 0.0), share * hit.score)
    out = [ScoredId(i, s) for i, s in scores.items()]
    out.sort(key=lambda h: (-h.score, h.id))
    return out


def diversified(
    hits: Sequence[ScoredId], texts: Mapping[str, str], trade_off: float, depth: int
) -> list[ScoredId]:
    """Maximal marginal relevance over the first ``depth`` hits: each pick maximises
    ``trade_off * score / best - (1 - trade_off) * (largest word overlap, Jaccard, with
    the picks so far)``; hits past ``depth`` (or without a text) keep their order after
    them. Scores are made non-increasing along the new order (each at most the one before
    it), so a caller's ``min_score`` still cuts a prefix.

    Why: a question that gathers facts from several places ("how many", "which of them")
    needs one hit of each, while a long answer and its follow-ups repeat one another's
    words and fill the top with one thing said five times."""
    from tulving.domain.similarity import jaccard
    from tulving.domain.similarity import word_set as words_of

    head = [h for h in hits[:depth] if h.id in texts]
    if trade_off >= 1.0 or len(head) < 3:
        return list(hits)
    rest = [h for h in hits if h not in head]
    top = max(h.score for h in head) or 1.0
    sets = {h.id: words_of(texts[h.id]) for h in head}
    closest = {h.id: 0.0 for h in head}
    remaining = list(head)
    picked: list[ScoredId] = []
    while remaining:
        best = max(remaining, key=lambda h: (
            trade_off * h.score / top - (1.0 - trade_off) * closest[h.id], -hits.index(h)))
        remaining.remove(best)
        picked.append(best)
        for h in remaining:
            closest[h.id] = max(closest[h.id], jaccard(sets[h.id], sets[best.id]))
    out: list[ScoredId] = []
    ceiling = float("inf")
    for h in picked + rest:
        ceiling = min(ceiling, h.score)
        out.append(ScoredId(h.id, ceiling))
    return out
