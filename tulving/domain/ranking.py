"""Composite ranking of curation candidates.

The failure this design prevents: a store full of important, fresh, pinned memories must
not bury the one memory that answers the query. So relevance is the base of the score and
every other signal acts as a *bounded multiplicative boost* on it::

    context = weighted mean of (recency, importance, frequency, type prior)     in [0, 1]
    trust_factor = 1 - w_trust * (1 - trust * confidence * review_factor)      in [0, 1]
    score = trust_factor * (relevance * (1 + boost_cap * context) + orient_floor * context)

With the default weights (``boost_cap`` 0.5, ``orient_floor`` 0.01) a memory with
relevance 0 scores at most 0.01 and a memory with relevance r scores at least
``(1 - w_trust) * r``; among equally relevant memories context and trust decide. In orient
mode (no query, every relevance 0) the small additive term is all there is, so the ranking
is by context and trust alone. Ties break by id, so the order is deterministic.

Signals, each in [0, 1]:

* recency: ``0.5 ** (hours since valid_from / recency_half_life_hours)`` (event time: an
  old decision imported today is still old). Default half-life 14 days.
* importance: ``MemoryEntry.importance_at(now)`` (lazy decay; DECISION and pinned never decay).
* frequency: ``log1p(access_count) / log1p(frequency_saturation)``, capped at 1
  (saturation 50 accesses by default).
* trust: ``trust * confidence``; an entry pending review (or rejected) is further
  multiplied by ``review_factor`` (0.5).
* type prior: ``TYPE_PRIOR[type]`` (DECISION and PREFERENCE highest), 1.0 for pinned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import attrs

from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, ValidationError
from tulving.domain.similarity import jaccard, word_set
from tulving.domain.types import MemoryType, ReviewStatus

#: How much a type is worth keeping in context when nothing else distinguishes two memories.
TYPE_PRIOR: Mapping[MemoryType, float] = {
    MemoryType.DECISION: 1.0,
    MemoryType.PREFERENCE: 0.9,
    MemoryType.PROCEDURE: 0.75,
    MemoryType.FACT: 0.6,
    MemoryType.SUMMARY: 0.55,
    MemoryType.PLAN: 0.5,
    MemoryType.OBSERVATION: 0.35,
    MemoryType.EPISODE: 0.3,
}


def _check_number(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"ranking weight {name!r} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise ValidationError(f"ranking weight {name!r} must be in [{low}, {high}], got {value!r}")
    return number


@attrs.frozen(kw_only=True)
class RankingWeights:
    """Tunable weights; start from a preset and override: ``RankingWeights.preset("recent")
    .with_(importance=0.5)`` or ``.with_({"importance": 0.5})``."""

    #: Weights of the context signals (relative to each other; normalised to a mean).
    recency: float = 0.25
    importance: float = 0.35
    frequency: float = 0.15
    type_prior: float = 0.25
    #: How much low trust pulls a score down: 0 ignores trust, 1 scales by trust fully.
    trust: float = 0.3
    #: Largest relative boost context can give relevance (0.5: at most x1.5).
    boost_cap: float = 0.5
    #: Additive weight of context, so orient mode (all relevance 0) still ranks.
    orient_floor: float = 0.01
    recency_half_life_hours: float = 14 * 24.0
    frequency_saturation: float = 50.0
    #: Trust multiplier for entries pending review or rejected.
    review_factor: float = 0.5

    PRESETS: ClassVar[tuple[str, ...]] = ("balanced", "relevance", "recent", "important")

    def __attrs_post_init__(self) -> None:
        for name in ("recency", "importance", "frequency", "type_prior"):
            _check_number(name, getattr(self, name), 0.0, 1e6)
        _check_number("trust", self.trust, 0.0, 1.0)
        _check_number("boost_cap", self.boost_cap, 0.0, 100.0)
        _check_number("orient_floor", self.orient_floor, 0.0, 1.0)
        _check_number("review_factor", self.review_factor, 0.0, 1.0)
        if _check_number("recency_half_life_hours", self.recency_half_life_hours, 0.0, 1e9) <= 0:
            raise ValidationError("ranking weight 'recency_half_life_hours' must be > 0")
        _check_number("frequency_saturation", self.frequency_saturation, 1.0, 1e12)

    @classmethod
    def preset(cls, name: str) -> RankingWeights:
        """``balanced`` (default), ``relevance`` (relevance only; context and trust only break
        near-ties), ``recent`` (fresh memories favoured, 3-day half-life), ``important``."""
        if name == "balanced":
            return cls()
        if name == "relevance":
            return cls(trust=0.0, boost_cap=0.0, orient_floor=0.001)
        if name == "recent":
            return cls(
                recency=0.6,
                importance=0.15,
                frequency=0.1,
                type_prior=0.15,
                boost_cap=1.0,
                recency_half_life_hours=3 * 24.0,
            )
        if name == "important":
            return cls(recency=0.1, importance=0.6, frequency=0.1, type_prior=0.2, boost_cap=1.0)
        raise ConfigError(
            f"unknown ranking preset {name!r}; expected one of: {', '.join(cls.PRESETS)}"
        )

    def with_(self, overrides: Mapping[str, Any] | None = None, /, **kwargs: Any) -> RankingWeights:
        changes = {**(overrides or {}), **kwargs}
        fields = {field.name for field in attrs.fields(RankingWeights)}
        unknown = sorted(set(changes) - fields)
        if unknown:
            raise ConfigError(
                f"unknown ranking weight(s) {', '.join(unknown)}; expected: {', '.join(sorted(fields))}"
            )
        return attrs.evolve(self, **changes)

    @classmethod
    def resolve(cls, spec: RankingWeights | str | Mapping[str, Any] | None) -> RankingWeights:
        """Weights from what a caller passes: None (balanced), a preset name, a mapping of
        overrides (may hold ``"preset"``), or weights."""
        if spec is None:
            return cls()
        if isinstance(spec, RankingWeights):
            return spec
        if isinstance(spec, str):
            return cls.preset(spec)
        if isinstance(spec, Mapping):
            overrides = dict(spec)
            base = overrides.pop("preset", "balanced")
            if not isinstance(base, str):
                raise ConfigError(f"ranking preset must be a name, got {base!r}")
            return cls.preset(base).with_(overrides)
        raise ConfigError(f"ranking weights must be a preset name or a mapping, got {spec!r}")


@attrs.frozen
class Candidate:
    """An entry and its fused relevance in [0, 1] (0 for every entry in orient mode)."""

    entry: MemoryEntry
    relevance: float = 0.0


@attrs.frozen
class Signals:
    recency: float
    importance: float
    frequency: float
    trust: float
    type_prior: float
    context: float


@attrs.frozen
class Ranked:
    entry: MemoryEntry
    score: float
    relevance: float
    signals: Signals

    @property
    def id(self) -> str:
        return self.entry.id


def _clamp(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def signals(entry: MemoryEntry, now: datetime, weights: RankingWeights) -> Signals:
    age_hours = max(0.0, (now - entry.valid_from).total_seconds() / 3600.0)
    recency = 0.5 ** (age_hours / weights.recency_half_life_hours)
    importance = _clamp(entry.importance_at(now))
    frequency = min(
        1.0, math.log1p(max(0, entry.access_count)) / math.log1p(weights.frequency_saturation)
    )
    trust = _clamp(entry.trust * entry.confidence)
    if entry.review_status in (ReviewStatus.PENDING, ReviewStatus.REJECTED):
        trust *= weights.review_factor
    type_prior = 1.0 if entry.pinned else TYPE_PRIOR[entry.type]
    total = weights.recency + weights.importance + weights.frequency + weights.type_prior
    context = (
        (
            weights.recency * recency
            + weights.importance * importance
            + weights.frequency * frequency
            + weights.type_prior * type_prior
        )
        / total
        if total > 0
        else 0.0
    )
    return Signals(recency, importance, frequency, trust, type_prior, _clamp(context))


def score(relevance: float, sig: Signals, weights: RankingWeights) -> float:
    trust_factor = 1.0 - weights.trust * (1.0 - sig.trust)
    boosted = relevance * (1.0 + weights.boost_cap * sig.context)
    return trust_factor * (boosted + weights.orient_floor * sig.context)


def _relevance(candidate: Candidate) -> float:
    value = candidate.relevance
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(
            f"relevance of {candidate.entry.id} must be a finite number, got {value!r}"
        )
    if not -1e-9 <= value <= 1.0 + 1e-9:
        raise ValidationError(f"relevance of {candidate.entry.id} must be in [0, 1], got {value!r}")
    return _clamp(float(value))


def rank(
    candidates: Iterable[Candidate], now: datetime, weights: RankingWeights | None = None
) -> list[Ranked]:
    """Candidates by score, best first; equal scores by id. Validates before computing."""
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise ValidationError(f"rank() needs an aware datetime for now, got {now!r}")
    chosen = weights if weights is not None else RankingWeights()
    items = list(candidates)
    relevances = [_relevance(candidate) for candidate in items]
    ranked = []
    for candidate, relevance in zip(items, relevances, strict=True):
        sig = signals(candidate.entry, now, chosen)
        ranked.append(Ranked(candidate.entry, score(relevance, sig, chosen), relevance, sig))
    ranked.sort(key=lambda item: (-item.score, item.entry.id))
    return ranked


def diversify(
    ranked: Sequence[Ranked],
    *,
    trade_off: float = 0.7,
    limit: int = 50,
    similarity: Callable[[MemoryEntry, MemoryEntry], float] | None = None,
) -> list[Ranked]:
    """Maximal marginal relevance over the first ``limit`` items: each pick maximises
    ``trade_off * score - (1 - trade_off) * max similarity to the picks so far`` (scores
    normalised by the best). Items past ``limit`` follow in their original order, so the
    cost stays ``O(limit**2)`` however many candidates there are."""
    if not 0.0 <= trade_off <= 1.0:
        raise ValidationError(f"trade_off must be in [0, 1], got {trade_off!r}")
    if limit < 0:
        raise ValidationError(f"limit must be >= 0, got {limit!r}")
    head, tail = list(ranked[:limit]), list(ranked[limit:])
    if len(head) < 3:
        return head + tail
    top = max(item.score for item in head) or 1.0
    words: dict[str, frozenset[str]] = {}

    def similar(a: MemoryEntry, b: MemoryEntry) -> float:
        if similarity is not None:
            return similarity(a, b)
        for entry in (a, b):
            if entry.id not in words:
                words[entry.id] = word_set(entry.content)
        return jaccard(words[a.id], words[b.id])

    picked: list[Ranked] = []
    closest = [0.0] * len(head)
    remaining = list(range(len(head)))
    while remaining:
        best = max(
            remaining,
            key=lambda i: (
                trade_off * head[i].score / top - (1.0 - trade_off) * closest[i],
                -i,
            ),
        )
        remaining.remove(best)
        picked.append(head[best])
        for i in remaining:
            closest[i] = max(closest[i], similar(head[i].entry, head[best].entry))
    return picked + tail


def spread_events(ranked: Sequence[Ranked], decay: float) -> list[Ranked]:
    """Candidates re-ordered so the budget is spread over events: each candidate's score is
    multiplied by ``decay`` for every better candidate recorded at the same event time in
    the same partition (one conversation session, one task). ``decay`` 1 changes nothing.

    Why: a question that gathers facts from several sessions ("how many", "which of
    them") needs one hit from each, not five from the one that matches best."""
    if not 0.0 < decay <= 1.0:
        raise ValidationError(f"decay must be in (0, 1], got {decay!r}")
    if decay == 1.0:
        return list(ranked)
    seen: dict[tuple[str, datetime], int] = {}
    out = []
    for item in ranked:
        group = (item.entry.partition, item.entry.valid_from)
        count = seen.get(group, 0)
        seen[group] = count + 1
        out.append(attrs.evolve(item, score=item.score * decay**count))
    out.sort(key=lambda item: (-item.score, item.entry.id))
    return out
