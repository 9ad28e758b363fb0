"""The second-stage score rules of hybrid search, as pure functions on plain values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tulving.domain.entry import EntryBrief
from tulving.domain.query import ScoredId
from tulving.domain.query_analysis import analyse
from tulving.domain.rerank import (
    RerankRules,
    boosted,
    derived_sources,
    entity_share,
    event_context,
    fold_derived,
    lift_neighbours,
    rescore,
    scaled,
    word_set,
)

T1 = datetime(2026, 5, 8, tzinfo=UTC)
T2 = datetime(2026, 6, 1, tzinfo=UTC)
RULES = RerankRules(entity_boost=0.3, temporal_boost=0.3, context_share=0.3)


def brief(entry_id: str, text: str, at: datetime = T1, sources: tuple[str, ...] = ()) -> EntryBrief:
    return EntryBrief(id=entry_id, content=text, valid_from=at, source_entry_ids=sources)


def test_rules_narrow_to_what_the_query_asks() -> None:
    plain = RULES.for_query(analyse("what is the deploy strategy?"))
    assert plain.entity_boost == 0.0 and plain.temporal_boost == 0.0
    assert plain.context_share == 0.3
    assert plain.ceiling == pytest.approx(1.3)
    named = RULES.for_query(analyse("When did Caroline go to the support group?"))
    assert named.entity_boost == 0.3 and named.temporal_boost == 0.3
    assert named.ceiling == pytest.approx(1.3 ** 3)


def test_word_set_splits_possessives_and_entity_share_counts_names() -> None:
    assert {"caroline", "s", "dog"} <= word_set("Caroline's dog")
    assert entity_share(("caroline", "melanie"), "Caroline's dog barked") == 0.5
    assert entity_share(("caroline",), "nobody named here") == 0.0
    assert entity_share((), "anything") == 0.0


def test_boosts_multiply_by_what_the_text_holds() -> None:
    analysis = analyse("When did Caroline move?")
    rules = RULES.for_query(analysis)
    assert boosted(0.5, "unrelated", analysis, rules) == 0.5
    assert boosted(0.5, "Caroline moved", analysis, rules) == pytest.approx(0.5 * 1.3)
    both = boosted(0.5, "Caroline moved last week", analysis, rules)
    assert both == pytest.approx(0.5 * 1.3 * 1.3)


def test_event_context_lends_the_best_other_score_of_the_same_moment() -> None:
    scores = {"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.8}
    times = {"a": T1, "b": T1, "c": T1, "d": T2}
    out = event_context(scores, times, 0.5)
    assert out["a"] == pytest.approx(0.9 + 0.5 * 0.5)  # the best borrows from the second
    assert out["b"] == pytest.approx(0.5 + 0.5 * 0.9)
    assert out["c"] == pytest.approx(0.4 + 0.5 * 0.9)
    assert out["d"] == 0.8  # alone at its moment


def test_rescore_keeps_unread_candidates_and_scaled_stays_in_unit_interval() -> None:
    analysis = analyse("When did Caroline move?")
    rules = RULES.for_query(analysis)
    head = [ScoredId("a", 1.0), ScoredId("gone", 0.9), ScoredId("b", 0.5)]
    briefs = {"a": brief("a", "Caroline moved last week"), "b": brief("b", "boxes", T2)}
    scores = rescore(head, briefs, analysis, rules)
    assert scores["gone"] == 0.9
    assert scores["a"] == pytest.approx(1.0 * 1.3 * 1.3)
    out = scaled(scores, rules.ceiling, [ScoredId("t", 0.2)])
    assert [h.id for h in out] == ["a", "gone", "b", "t"]
    assert all(0.0 <= h.score <= 1.0 for h in out)
    assert out[0].score == pytest.approx(1.0 / 1.3)  # no context partner: below the ceiling
    assert out[-1].score == pytest.approx(0.2 / rules.ceiling)


def test_a_derived_memory_folds_into_its_present_source() -> None:
    briefs = {
        "fact": brief("fact", "Caroline likes tea", sources=("turn",)),
        "orphan": brief("orphan", "Mel likes coffee", sources=("lost",)),
        "turn": brief("turn", "Caroline: I like tea"),
    }
    scores = {"fact": 0.9, "orphan": 0.8, "turn": 0.3}
    derived = derived_sources(scores, briefs)
    assert derived == {"fact": "turn", "orphan": "lost"}
    fold_derived(scores, derived, present=set())
    assert set(scores) == {"orphan", "turn"}  # the turn stands for the fact at its own rank
    scores = {"orphan": 0.8}
    fold_derived(scores, {"orphan": "lost"}, present={"lost"})  # read and visible
    assert scores == {}


def test_neighbours_are_lifted_to_a_share_never_past_their_lender() -> None:
    fused = [ScoredId("q", 1.0), ScoredId("x", 0.6), ScoredId("deep", 0.1)]
    around = {"q": ["answer", "x"], "x": ["other"], "deep": ["ignored"]}
    out = lift_neighbours(fused, around, share=0.5, depth=2)
    scores = {h.id: h.score for h in out}
    assert out[0].id == "q"
    assert scores["answer"] == 0.5
    assert scores["x"] == 0.6  # max, not a sum: already above the share
    assert scores["other"] == pytest.approx(0.3)
    assert "ignored" not in scores  # beyond depth
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)


def test_diversified_moves_a_repeat_down_and_keeps_scores_non_increasing() -> None:
    from tulving.domain.rerank import diversified

    hits = [ScoredId("a", 0.9), ScoredId("b", 0.88), ScoredId("c", 0.8), ScoredId("d", 0.5)]
    texts = {"a": "the deploy pipeline uses blue green releases",
             "b": "the deploy pipeline uses blue green releases today",
             "c": "postgres backups run nightly with point in time recovery"}
    out = diversified(hits, texts, 0.5, depth=3)
    assert [h.id for h in out] == ["a", "c", "b", "d"]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
    assert diversified(hits, texts, 1.0, depth=3) == hits
