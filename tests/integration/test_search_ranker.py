"""The learned ranker of hybrid search (issue 45) and the meaning of its scores (issue 40).

The rows the training script dumps must be the rows search scores; a score must mean the
same from one query to the next (two memories that say the same thing score alike, a
query that matches nothing scores low); ``min_score`` is checked; the hand-tuned fusion
stays available.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tulving import Memory
from tulving.application.retrieval import features, ranker
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import Searcher, build_filter
from tulving.domain.errors import ConfigError, ValidationError

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
T0 = datetime(2024, 3, 1, tzinfo=UTC)
#: the learned ranker is an option (the hand-tuned fusion is the default)
LEARNED = {"search": {"ranker": "learned"}}
TOPICS = ["the deploy pipeline", "the pottery class", "a marathon plan", "the bakery",
          "the new puppy", "the budget review", "a trip to Lisbon", "the garden"]


def _conversation(memory: Memory) -> None:
    """Sessions of turns at shared event times, as an application logs a conversation."""
    for session in range(8):
        at = T0 + timedelta(days=7 * session)
        memory.store_many(
            {"content": f"[{at:%d %B %Y}] {'Ana' if turn % 2 else 'Ben'}: turn {turn} of "
                        f"session {session} about {TOPICS[(session + turn) % len(TOPICS)]}"
                        + (" last Friday" if turn == 3 else ""),
             "type": "EPISODE", "valid_from": at, "metadata": {"turn": f"{session}/{turn}"}}
            for turn in range(12))


def test_search_scores_the_rows_the_training_script_dumps(
    make_memory: Callable[..., Any],
) -> None:
    """Same features at train and serve time: the script's rows (whole entries, an engine
    depth of 100) scored by the shipped model give exactly the scores and order that
    ``search()`` returns (briefs, the depth a caller's ``top_k`` asks for)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from train_ranker import ENGINE_DEPTH, pool_rows
    finally:
        sys.path.remove(str(BENCHMARKS))
    m = make_memory(options=LEARNED)
    _conversation(m)
    model = ranker.load()
    searcher = Searcher(m.ctx, SearchOptions.learned())
    for query in ("When did Ana talk about the pottery class?", "marathon plan",
                  "what about the new puppy in session 3", "zebra xylophone"):
        rows, _ = pool_rows(searcher, query, lambda turn: False,
                            lambda entry: entry.metadata.get("turn"))
        pool = searcher.ranker_pool(query, build_filter(m.ctx), ENGINE_DEPTH, {})
        assert np.array_equal(rows, pool.matrix)
        expected = sorted(zip(model.probabilities(rows).tolist(), pool.ids, strict=True),
                          key=lambda pair: (-pair[0], pair[1]))
        for top_k in (5, 50):
            served = m.search(query, top_k)
            assert [r.entry.id for r in served] == [i for _, i in expected[:top_k]], query
            assert [r.score for r in served] == pytest.approx(
                [p for p, _ in expected[:top_k]], abs=1e-12)


def test_rows_hold_every_feature_in_order_and_in_range(make_memory: Callable[..., Any]) -> None:
    m = make_memory()
    _conversation(m)
    pool = Searcher(m.ctx).ranker_pool("When was the pottery class?", build_filter(m.ctx), 50,
                                       {})
    assert pool.matrix.shape == (len(pool.ids), len(features.FEATURES))
    assert len(set(pool.ids)) == len(pool.ids) and np.isfinite(pool.matrix).all()
    for name in ("lex_in", "lex_ratio", "cos_ratio", "both", "evidence", "coverage",
                 "rare_coverage", "names", "names_missed", "when_match", "recency"):
        column = pool.column(name)
        assert ((column >= 0) & (column <= 1)).all(), name
    assert pool.column("when_match").max() == 1.0  # "last Friday" for a "when" question
    assert set(features.FEATURES) == {f for g in features.GROUPS.values() for f in g}


@pytest.mark.model
def test_equal_matches_score_alike_and_no_match_scores_low(tmp_path: Path) -> None:
    """Issue 40's example: before, "Bob is vegetarian too" and "Alice has been vegetarian
    since 2019" scored 0.769 and 0.289 for "vegetarian", every unrelated memory about 0.3,
    and a query matching nothing gave its best hit 0.317 as well."""
    with Memory(tmp_path / "m.db", agent_id="a", options=LEARNED) as m:
        m.store_many({"content": text, "type": "FACT"} for text in (
            "Alice has been vegetarian since 2019", "Bob is vegetarian too",
            "The team lunch is on Friday at noon", "Carol prefers answers in Portuguese",
            "The deploy pipeline runs every night", "Dave bought a new bicycle last week"))
        found = m.search("vegetarian", 6)
        both = {r.entry.content: r.score for r in found[:2]}
        assert set(both) == {"Bob is vegetarian too", "Alice has been vegetarian since 2019"}
        low, high = sorted(both.values())
        assert high / low < 3.0  # alike: within a factor of three of each other ...
        assert all(r.score < low / 10 for r in found[2:])  # ... far above what does not match
        nothing = m.search("zebra xylophone quantum chromodynamics", 3)
        assert nothing[0].score < low / 5
        assert nothing[0].score < 0.03  # the threshold docs/library/search.md suggests
        assert m.search("zebra xylophone quantum chromodynamics", 3, min_score=0.03) == []
        kept = m.search("vegetarian", 6, min_score=0.03)
        assert {r.entry.content for r in kept} == set(both)


def test_min_score_cuts_a_prefix_and_bad_values_are_typed_errors(
    make_memory: Callable[..., Any],
) -> None:
    m = make_memory()
    _conversation(m)
    for mode in ("hybrid", "semantic", "lexical"):
        results = m.search("pottery class session", 20, mode=mode)
        scores = [r.score for r in results]
        assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
        cut = scores[len(scores) // 2]
        kept = m.search("pottery class session", 20, mode=mode, min_score=cut)
        assert [r.entry.id for r in kept] == [r.entry.id for r in results if r.score >= cut]
    assert m.search("pottery class", 5, min_score=1) == [] or all(
        r.score == 1.0 for r in m.search("pottery class", 5, min_score=1))
    for bad in (-0.1, 1.5, math.nan, True, "0.5"):
        with pytest.raises(ValidationError, match="min_score"):
            m.search("pottery", 5, min_score=bad)


def test_the_hand_tuned_fusion_stays_an_option(make_memory: Callable[..., Any]) -> None:
    m = make_memory()
    _conversation(m)
    flt = build_filter(m.ctx)
    query = "When did Ana talk about the pottery class?"
    learned = Searcher(m.ctx, SearchOptions.learned()).search(query, 10, "hybrid", flt, None)
    fused = Searcher(m.ctx, SearchOptions.fused()).search(query, 10, "hybrid", flt, None)
    assert learned and fused
    assert [r.score for r in learned] != [r.score for r in fused]
    assert SearchOptions().ranker == "fused" and SearchOptions.learned().ranker == "learned"
    chosen = make_memory("fused.db", options={"search": {"ranker": "fused"}})
    _conversation(chosen)
    assert [r.entry.content for r in chosen.search(query, 10)] == [
        r.entry.content for r in fused]
    assert [r.score for r in chosen.search(query, 10)] == [r.score for r in fused]
    with pytest.raises(ConfigError, match="ranker"):
        make_memory("bad.db", options={"search": {"ranker": "neural"}})


def test_a_model_file_that_does_not_fit_is_refused() -> None:
    good = ranker.load()
    assert good.features == features.FEATURES
    body = {"format": 1, "features": list(features.FEATURES),
            **{k: getattr(good, k).tolist() for k in ("low", "high", "mean", "scale")},
            "layers": [{"weights": layer.weights.tolist(), "bias": layer.bias.tolist()}
                       for layer in good.layers]}
    again = ranker.LearnedRanker.from_dict(body)
    rows = np.random.default_rng(1).random((7, len(features.FEATURES)))
    assert np.array_equal(again.probabilities(rows), good.probabilities(rows))
    with pytest.raises(ConfigError, match="other features"):
        ranker.LearnedRanker.from_dict({**body, "features": list(features.FEATURES)[::-1]})
    with pytest.raises(ConfigError, match="format"):
        ranker.LearnedRanker.from_dict({**body, "format": 99})
    with pytest.raises(ConfigError, match="shapes"):
        ranker.LearnedRanker.from_dict({**body, "mean": body["mean"][:-1]})
    with pytest.raises(ConfigError, match="no ranker model"):
        ranker.load("no-such-model")
    with pytest.raises(ConfigError, match="ranker"):
        SearchOptions(ranker="neural")
