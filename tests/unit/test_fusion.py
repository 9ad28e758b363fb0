"""Fusion, query analysis and time expressions: pure functions, no I/O."""

from __future__ import annotations

import pytest

from tulving.domain.fusion import blend, normalise, rrf
from tulving.domain.query import ScoredId
from tulving.domain.query_analysis import analyse
from tulving.domain.temporal import asks_when, mentions_relative_time


def _ids(hits: list[ScoredId]) -> list[str]:
    return [h.id for h in hits]


def test_rrf_rewards_agreement_and_scales_to_one() -> None:
    a = [ScoredId("x", 9.0), ScoredId("y", 5.0)]
    b = [ScoredId("x", 0.9), ScoredId("z", 0.8)]
    fused = rrf([a, b])
    assert _ids(fused)[0] == "x" and fused[0].score == 1.0
    assert all(0 < h.score <= 1 for h in fused)


def test_rrf_weights_tilt_the_order() -> None:
    a, b = [ScoredId("x", 1.0)], [ScoredId("y", 1.0)]
    assert _ids(rrf([a, b], [1.0, 0.5]))[0] == "x"
    assert _ids(rrf([a, b], [0.5, 1.0]))[0] == "y"


def test_blend_keeps_margins_that_rank_fusion_flattens() -> None:
    lexical = [ScoredId("strong", 30.0), ScoredId("a", 3.0), ScoredId("b", 2.9)]
    semantic = [ScoredId("a", 0.52), ScoredId("strong", 0.51), ScoredId("b", 0.50)]
    assert _ids(blend([lexical, semantic], [1.0, 1.0]))[0] == "strong"
    assert _ids(rrf([lexical, semantic]))[0] != "strong"
    assert all(0.0 <= h.score <= 1.0 for h in blend([lexical, semantic]))


def test_blend_and_normalise_edge_cases() -> None:
    assert blend([[], []]) == [] and normalise([]) == []
    single = blend([[ScoredId("only", 2.0)], []], [1.0, 1.0])
    assert single == [ScoredId("only", 0.5)]
    assert normalise([ScoredId("a", -1.0)]) == [ScoredId("a", 0.0)]


def test_query_analysis_finds_names_not_question_words() -> None:
    q = analyse("When did Caroline's brother visit Melanie in Paris?")
    assert q.entities == ("caroline", "melanie", "paris") and q.asks_when
    assert analyse("What is the deploy key?").entities == ()
    assert not analyse("What did Bob paint?").asks_when


def test_time_expressions() -> None:
    for when in ("When did she move?", "what year was it", "How long ago did he quit?",
                 "So when was the launch?"):
        assert asks_when(when), when
    assert not asks_when("Where did she move?")
    for said in ("I went yesterday", "we met last Friday", "two weeks ago", "next month!",
                 "since Monday it rains"):
        assert mentions_relative_time(said), said
    assert not mentions_relative_time("[08 May 2023] Caroline: I love painting")


def test_blend_scales_over_a_fixed_depth_so_a_longer_tail_changes_nothing_above() -> None:
    lexical = [ScoredId(f"l{i}", 20.0 - i) for i in range(10)]
    semantic = [ScoredId(f"s{i}", 0.9 - 0.01 * i) for i in range(10)]
    shallow = blend([lexical, semantic], [1.0, 0.7], depth=10)
    tails = [[*lexical, ScoredId("lt1", 0.6), ScoredId("lt2", 0.5)],
             [*semantic, ScoredId("st", 0.1)]]
    deep = blend(tails, [1.0, 0.7], depth=10)
    assert _ids(deep)[: len(shallow) - 2] == _ids(shallow)[:-2]  # the two floors tie at 0
    assert [h.score for h in deep[:10]] == pytest.approx([h.score for h in shallow[:10]])
    scores = {h.id: h.score for h in deep}
    # below the span: next to nothing, but still in the engine's order, never negative
    assert 0.0 < scores["lt1"] < 1e-8 and scores["lt2"] == 0.0
    assert _ids(deep).index("lt1") < _ids(deep).index("lt2")
    # without a depth the same tail rescales the lists and reorders the top
    assert _ids(blend(tails, [1.0, 0.7]))[:6] != _ids(shallow)[:6]


def test_blend_depth_with_a_flat_head() -> None:
    flat = [ScoredId("a", 1.0), ScoredId("b", 1.0), ScoredId("c", 0.2)]
    scores = {h.id: h.score for h in blend([flat], depth=2)}
    assert scores["a"] == scores["b"] == 1.0 and scores["c"] == 0.0
