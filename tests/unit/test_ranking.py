"""Composite ranking: relevance leads, context and trust break ties, weights are tunable."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ConfigError, ValidationError
from tulving.domain.ranking import (
    Candidate,
    RankingWeights,
    diversify,
    rank,
    signals,
)
from tulving.domain.types import MemoryType, ReviewStatus

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def entry(
    entry_id: str,
    content: str = "some memory",
    *,
    type: MemoryType = MemoryType.FACT,
    age_days: float = 1.0,
    accessed_days_ago: float | None = None,
    **fields: Any,
) -> MemoryEntry:
    at = NOW - timedelta(days=age_days)
    accessed = NOW - timedelta(days=age_days if accessed_days_ago is None else accessed_days_ago)
    return MemoryEntry(
        id=entry_id,
        content=content,
        type=type,
        agent_id="agent",
        partition="p",
        created_at=at,
        updated_at=at,
        valid_from=at,
        last_accessed_at=accessed,
        **fields,
    )


def test_relevant_memory_beats_twenty_important_irrelevant_ones() -> None:
    """The regression a peer library fails: importance must not swamp relevance."""
    relevant = entry(
        "z-relevant", type=MemoryType.OBSERVATION, age_days=400, importance=0.05, trust=0.5
    )
    noise = [
        entry(
            f"a-noise-{i:02d}",
            type=MemoryType.DECISION,
            age_days=0.01,
            importance=1.0,
            pinned=True,
            access_count=10_000,
            trust=1.0,
        )
        for i in range(20)
    ]
    candidates = [Candidate(e, 0.0) for e in noise] + [Candidate(relevant, 0.35)]
    ranked = rank(candidates, NOW)
    assert ranked[0].id == "z-relevant"
    assert ranked[0].score > 10 * ranked[1].score


def test_weakly_relevant_noise_still_loses_to_the_relevant_memory() -> None:
    relevant = entry("relevant", type=MemoryType.EPISODE, age_days=300, importance=0.1)
    noise = [
        Candidate(entry(f"n{i}", type=MemoryType.DECISION, importance=1.0, pinned=True), 0.2)
        for i in range(20)
    ]
    ranked = rank([*noise, Candidate(relevant, 0.9)], NOW)
    assert ranked[0].id == "relevant"


def test_among_equally_relevant_the_important_one_wins() -> None:
    low = entry("a-low", importance=0.1)
    high = entry("b-high", importance=0.9)
    assert [r.id for r in rank([Candidate(low, 0.6), Candidate(high, 0.6)], NOW)] == [
        "b-high",
        "a-low",
    ]


def test_among_equally_relevant_the_recent_one_wins() -> None:
    old = entry("a-old", age_days=200, accessed_days_ago=1)
    new = entry("b-new", age_days=1)
    assert rank([Candidate(old, 0.6), Candidate(new, 0.6)], NOW)[0].id == "b-new"


def test_untrusted_or_pending_ranks_below_trusted_equal() -> None:
    trusted = entry("c-trusted", trust=0.95)
    untrusted = entry("a-untrusted", trust=0.3)
    pending = entry("b-pending", trust=0.95, review_status=ReviewStatus.PENDING)
    ranked = rank([Candidate(e, 0.7) for e in (untrusted, pending, trusted)], NOW)
    assert ranked[0].id == "c-trusted"
    assert {r.id for r in ranked[1:]} == {"a-untrusted", "b-pending"}
    low_confidence = entry("d-unsure", trust=0.95, confidence=0.2)
    assert rank([Candidate(low_confidence, 0.7), Candidate(trusted, 0.7)], NOW)[0].id == (
        "c-trusted"
    )


def test_type_prior_prefers_decisions_and_preferences() -> None:
    kinds = [MemoryType.EPISODE, MemoryType.DECISION, MemoryType.PREFERENCE, MemoryType.OBSERVATION]
    ranked = rank([Candidate(entry(f"m{i}", type=t), 0.5) for i, t in enumerate(kinds)], NOW)
    assert [r.entry.type for r in ranked[:2]] == [MemoryType.DECISION, MemoryType.PREFERENCE]


def test_boost_is_bounded() -> None:
    """Context can lift a score by at most boost_cap: a far more relevant bare memory wins."""
    weights = RankingWeights()
    best_context = entry(
        "a", type=MemoryType.DECISION, age_days=0, importance=1.0, pinned=True, access_count=999,
        trust=1.0,
    )  # fmt: skip
    no_context = entry("b", type=MemoryType.EPISODE, age_days=3000, importance=0.0, trust=1.0)
    ranked = rank([Candidate(best_context, 0.5), Candidate(no_context, 0.9)], NOW, weights)
    assert ranked[0].id == "b"
    top = rank([Candidate(best_context, 0.5)], NOW, weights)[0]
    assert top.score <= 0.5 * (1 + weights.boost_cap) + weights.orient_floor + 1e-12


def test_orient_mode_ranks_by_context() -> None:
    """No query: every relevance is 0, and importance/recency/type still order the list."""
    ranked = rank(
        [
            Candidate(entry("a-episode", type=MemoryType.EPISODE, age_days=100, importance=0.2)),
            Candidate(entry("b-decision", type=MemoryType.DECISION, importance=0.9)),
            Candidate(entry("c-fact", importance=0.5, age_days=10)),
        ],
        NOW,
    )
    assert [r.id for r in ranked] == ["b-decision", "c-fact", "a-episode"]
    assert all(r.score > 0 for r in ranked)


def test_ties_break_by_id_and_order_is_deterministic() -> None:
    same = [Candidate(entry(f"id-{i}"), 0.5) for i in (3, 1, 2)]
    assert [r.id for r in rank(same, NOW)] == ["id-1", "id-2", "id-3"]
    assert rank(list(reversed(same)), NOW) == rank(same, NOW)


def test_signals_are_bounded_and_documented_shapes() -> None:
    weights = RankingWeights()
    fresh = signals(entry("x", age_days=0, access_count=10_000, importance=3.0), NOW, weights)
    assert fresh.recency == pytest.approx(1.0)
    assert fresh.frequency == 1.0 and fresh.importance == 1.0
    half = signals(entry("y", age_days=14), NOW, weights)
    assert half.recency == pytest.approx(0.5)
    some = signals(entry("z", access_count=7), NOW, weights)
    assert some.frequency == pytest.approx(math.log(8) / math.log(51))
    for sig in (fresh, half, some):
        for value in (sig.recency, sig.importance, sig.frequency, sig.trust, sig.type_prior):
            assert 0.0 <= value <= 1.0


def test_decayed_importance_is_used() -> None:
    weights = RankingWeights()
    stale = signals(
        entry("s", type=MemoryType.OBSERVATION, importance=0.8, age_days=6), NOW, weights
    )
    assert stale.importance == pytest.approx(0.2)
    decision = signals(
        entry("d", type=MemoryType.DECISION, importance=0.8, age_days=600), NOW, weights
    )
    assert decision.importance == pytest.approx(0.8)


def test_presets_and_overrides() -> None:
    assert RankingWeights.preset("balanced") == RankingWeights()
    recent = RankingWeights.preset("recent")
    important = RankingWeights.preset("important")
    assert recent.recency > RankingWeights().recency
    assert important.importance > RankingWeights().importance
    assert RankingWeights().with_(recency=0.3).recency == 0.3
    assert RankingWeights().with_({"importance": 0.9}).importance == 0.9
    assert RankingWeights.resolve(None) == RankingWeights()
    assert RankingWeights.resolve("recent") == recent
    assert RankingWeights.resolve({"preset": "important", "trust": 0.0}) == important.with_(
        trust=0.0
    )
    for name in RankingWeights.PRESETS:
        RankingWeights.preset(name)


def test_presets_change_the_order() -> None:
    fresh_minor = entry("a-fresh", age_days=0.1, importance=0.2)
    old_major = entry("b-old", type=MemoryType.DECISION, age_days=90, importance=1.0)
    candidates = [Candidate(fresh_minor, 0.5), Candidate(old_major, 0.5)]
    assert rank(candidates, NOW, RankingWeights.preset("recent"))[0].id == "a-fresh"
    assert rank(candidates, NOW, RankingWeights.preset("important"))[0].id == "b-old"


def test_relevance_preset_orders_by_relevance_only() -> None:
    weights = RankingWeights.preset("relevance")
    low = entry("a", type=MemoryType.DECISION, importance=1.0, pinned=True, trust=1.0)
    high = entry("b", type=MemoryType.EPISODE, importance=0.0, age_days=900, trust=0.1)
    assert [r.id for r in rank([Candidate(low, 0.50), Candidate(high, 0.51)], NOW, weights)] == [
        "b",
        "a",
    ]


@pytest.mark.parametrize("name", ["fast", "", "Balanced"])
def test_unknown_preset_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError):
        RankingWeights.preset(name)


def test_bad_overrides_are_rejected() -> None:
    with pytest.raises(ConfigError):
        RankingWeights().with_(recency_weight=0.3)
    with pytest.raises(ValidationError):
        RankingWeights().with_(recency=-1)
    with pytest.raises(ValidationError):
        RankingWeights().with_(trust=1.5)
    with pytest.raises(ValidationError):
        RankingWeights().with_(importance=float("nan"))
    with pytest.raises(ValidationError):
        RankingWeights().with_(recency_half_life_hours=0)
    with pytest.raises(ConfigError):
        RankingWeights.resolve(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("relevance", [-0.1, 1.5, float("nan"), float("inf")])
def test_relevance_outside_unit_interval_is_rejected(relevance: float) -> None:
    with pytest.raises(ValidationError):
        rank([Candidate(entry("a"), relevance)], NOW)


def test_naive_now_is_rejected() -> None:
    with pytest.raises(ValidationError):
        rank([Candidate(entry("a"), 0.5)], NOW.replace(tzinfo=None))


def test_diversify_moves_a_near_copy_down() -> None:
    text = "the deploy pipeline uses blue green releases behind the load balancer"
    a = entry("a", text)
    b = entry("b", text + " today")
    c = entry("c", "postgres backups run nightly at two with point in time recovery")
    ranked = rank([Candidate(a, 0.9), Candidate(b, 0.88), Candidate(c, 0.8)], NOW)
    assert [r.id for r in ranked] == ["a", "b", "c"]
    assert [r.id for r in diversify(ranked, trade_off=0.5)] == ["a", "c", "b"]
    assert diversify(ranked, trade_off=1.0) == ranked
    with pytest.raises(ValidationError):
        diversify(ranked, trade_off=2.0)


def test_spread_events_lowers_the_later_members_of_one_session() -> None:
    from tulving.domain.ranking import spread_events

    one = [entry(f"s{i}", f"session one turn {i}", age_days=2.0) for i in range(3)]
    other = entry("t0", "session two turn", age_days=1.0)
    ranked = rank([Candidate(one[0], 0.9), Candidate(one[1], 0.85), Candidate(one[2], 0.8),
                   Candidate(other, 0.7)], NOW)
    assert [r.id for r in ranked] == ["s0", "s1", "s2", "t0"]
    spread = spread_events(ranked, 0.7)
    assert [r.id for r in spread] == ["s0", "t0", "s1", "s2"]
    assert spread_events(ranked, 1.0) == ranked
    with pytest.raises(ValidationError):
        spread_events(ranked, 0.0)
