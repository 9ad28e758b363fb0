"""Memory.search end to end on real SQLite (+ hnswlib, + the local model where marked)."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tulving import Memory
from tulving.application.plumbing.warnings_once import TulvingWarning, reset_warnings
from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import Searcher, build_filter
from tulving.domain.errors import TulvingError, ValidationError

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _filler(n: int, tag: str = "bulk") -> list[dict[str, Any]]:
    topics = ["deploy pipeline", "database index", "budget meeting", "auth tokens", "cache"]
    return [
        {"content": f"note {i} about the {topics[i % 5]} and the weekly report",
         "type": "FACT", "tags": [tag]}
        for i in range(n)
    ]


@pytest.mark.parametrize("vectors", ["exact", "hnsw"])
def test_tag_filter_never_loses_recall(make_memory: Any, vectors: str) -> None:
    m = make_memory(vectors=vectors)
    m.store_many(_filler(400))
    rare = m.store_many(
        [{"content": f"unrelated gardening fact {i}: tomatoes need sun", "type": "FACT",
          "tags": ["rare"]} for i in range(5)]
    )
    for mode in ("hybrid", "semantic", "lexical"):
        found = m.search("weekly report about the deploy pipeline", 5, mode=mode, tags=["rare"])
        if mode == "lexical":
            assert found == []  # no shared word: lexical cannot match, and must not cheat
            continue
        assert {r.entry.id for r in found} == {e.id for e in rare}, mode


@pytest.mark.parametrize("vectors", ["exact", "hnsw"])
def test_type_filter_over_fetch_and_allow_list(make_memory: Any, vectors: str) -> None:
    m = make_memory(vectors=vectors)
    m.store_many(_filler(300))
    plans = m.store_many(
        [{"content": f"plan {i}: weekly report about the deploy pipeline", "type": "PLAN"}
         for i in range(3)]
    )
    found = m.search("deploy pipeline weekly report", 10, types=["PLAN"])
    assert {r.entry.id for r in found} == {e.id for e in plans}
    assert all(r.entry.type.value == "PLAN" for r in found)


def test_archived_entries_never_surface(make_memory: Any) -> None:
    m = make_memory()
    keep = m.store("the staging server runs on port 8080", type="FACT")
    gone = m.store("the staging server runs on port 9090", type="FACT")
    old = m.store("the deploy key is rotated monthly", type="FACT", key="deploy/key")
    m.store("the deploy key is rotated weekly", type="FACT", key="deploy/key")
    m.forget(gone.id)
    for mode in ("hybrid", "semantic", "lexical"):
        ids = {r.entry.id for r in m.search("staging server port deploy key rotated", 20,
                                             mode=mode)}
        assert keep.id in ids and gone.id not in ids and old.id not in ids, mode
    assert old.id not in {r.entry.id for r in m.search("deploy/key", 5, mode="key")}


def test_since_until_filter_on_event_time_not_write_time(make_memory: Any) -> None:
    m = make_memory()
    early = m.store("we shipped release one", type="EPISODE", valid_from=T0)
    late = m.store("we shipped release two", type="EPISODE", valid_from=T0 + timedelta(days=30))
    # both were *written* now (the manual clock is in 2026); event time is what filters
    only_late = m.search("shipped release", 10, since=T0 + timedelta(days=1))
    assert [r.entry.id for r in only_late] == [late.id]
    only_early = m.search("shipped release", 10, until=T0 + timedelta(days=1))
    assert [r.entry.id for r in only_early] == [early.id]
    both = m.search("shipped release", 10, since=T0, until=T0 + timedelta(days=30))
    assert {r.entry.id for r in both} == {early.id, late.id}


def test_no_embedder_searches_lexically_with_one_warning(make_memory: Any) -> None:
    reset_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = make_memory(embedder=None)
        m.store("the invoice service retries three times", type="FACT")
        first = m.search("invoice retries", 5)
        second = m.search("invoice retries", 5, mode="semantic")
    said = [w for w in caught if issubclass(w.category, TulvingWarning)]
    assert len(said) == 1 and "lexical" in str(said[0].message)
    assert first and first[0].match_type == "lexical" and second[0].match_type == "lexical"


def test_bad_input_is_a_typed_error(make_memory: Any) -> None:
    m = make_memory()
    m.store("something", type="FACT")
    for call in (
        lambda: m.search("", 5),
        lambda: m.search("x", 0),
        lambda: m.search("x", True),
        lambda: m.search("x", 5, mode="fuzzy"),
        lambda: m.search("x" * 10_001, 5),
        lambda: m.search("x", 5, types=["NOPE"]),
    ):
        with pytest.raises(TulvingError):
            call()
    with pytest.raises(ValidationError):
        m.search(None, 5)  # type: ignore[arg-type]


def test_scores_are_in_unit_range_and_min_score_filters(make_memory: Any) -> None:
    m = make_memory()
    m.store_many(_filler(50))
    for mode in ("hybrid", "semantic", "lexical"):
        results = m.search("budget meeting weekly report", 20, mode=mode)
        assert results and all(0.0 <= r.score <= 1.0 for r in results), mode
        scores = [r.score for r in results]
        assert scores == sorted(scores, reverse=True)
        cut = scores[len(scores) // 2]
        assert all(r.score >= cut for r in m.search("budget meeting weekly report", 20,
                                                     mode=mode, min_score=cut))


def test_entity_named_in_query_wins_a_close_call(make_memory: Any) -> None:
    m = make_memory()
    other = m.store("Alice: I painted a sunset over the lake last weekend", type="EPISODE")
    named = m.store("Bob: I painted a sunset over the lake", type="EPISODE")
    plain = Searcher(m.ctx, SearchOptions.plain())
    flt = build_filter(m.ctx)
    tuned = Searcher(m.ctx, SearchOptions(ranker="fused", fusion="rrf", entity_boost=0.3, temporal_boost=0.0,
                                          context_share=0.0))
    query = "What did Bob paint over the lake?"
    assert {r.entry.id for r in plain.search(query, 2, "hybrid", flt, None)} == {
        other.id, named.id}
    assert tuned.search(query, 2, "hybrid", flt, None)[0].entry.id == named.id


def test_when_question_prefers_the_memory_that_says_when(make_memory: Any) -> None:
    m = make_memory()
    undated = m.store("I love going to the pottery class with my friends", type="EPISODE")
    dated = m.store("I signed up for a pottery class last Friday", type="EPISODE")
    flt = build_filter(m.ctx)
    on = Searcher(m.ctx, SearchOptions(ranker="fused", fusion="rrf", temporal_boost=0.3, entity_boost=0.0,
                                       context_share=0.0))
    off = Searcher(m.ctx, SearchOptions(ranker="fused", fusion="rrf", temporal_boost=0.0, entity_boost=0.0,
                                        context_share=0.0))
    query = "When did she go to the pottery class?"
    assert on.search(query, 1, "hybrid", flt, None)[0].entry.id == dated.id
    # not a "when" question: the boost does not apply
    what = "What pottery class did she love going to with friends?"
    assert off.search(what, 1, "hybrid", flt, None)[0].entry.id == undated.id
    assert on.search(what, 1, "hybrid", flt, None)[0].entry.id == undated.id


def test_memories_recorded_together_lift_each_other(make_memory: Any) -> None:
    m = make_memory()
    session = T0 + timedelta(days=3)
    m.store_many([
        {"content": "Did you finish the marathon training plan?", "type": "EPISODE",
         "valid_from": session},
        {"content": "Yes, I run forty kilometres every week now", "type": "EPISODE",
         "valid_from": session},
    ])
    stray = m.store("I run a small bakery downtown", type="EPISODE",
                    valid_from=T0 + timedelta(days=90))
    flt = build_filter(m.ctx)
    query = "marathon training: how much does she run?"
    with_ctx = Searcher(m.ctx, SearchOptions(ranker="fused", fusion="rrf", context_share=0.5, entity_boost=0.0,
                                             temporal_boost=0.0))
    ranked = [r.entry.content for r in with_ctx.search(query, 3, "hybrid", flt, None)]
    assert ranked.index("Yes, I run forty kilometres every week now") < ranked.index(
        stray.content)


def test_the_turn_written_next_to_a_hit_comes_along(make_memory: Any) -> None:
    """The answer shares no word with the question; the turn that asked it does.
    Plain vectors: a contextual one (the default) reads the question into the answer's
    vector and finds it without neighbours (tests/integration/test_contextual_vectors.py)."""
    m = make_memory(options={"writing": {"context_window": 0}})
    m.store_many(_filler(120))
    session = T0 + timedelta(days=5)
    asked, answered, later = m.store_many([
        {"content": "Melanie: what was the poetry reading about?", "type": "EPISODE",
         "valid_from": session},
        {"content": "Caroline: stories of people finding themselves, told in verse",
         "type": "EPISODE", "valid_from": session},
        {"content": "Caroline: the bakery opens at nine", "type": "EPISODE",
         "valid_from": session},
    ])
    elsewhere = m.store("Caroline: I adopted a kitten", type="EPISODE",
                        valid_from=T0 + timedelta(days=9))
    flt = build_filter(m.ctx)
    # not the asked turn word for word: that one is the question's echo (domain.hygiene)
    query = "what was that poetry reading about"
    on = Searcher(m.ctx, SearchOptions(ranker="fused", neighbour_share=0.5))
    off = Searcher(m.ctx, SearchOptions(ranker="fused", neighbour_share=0.0))
    with_neighbours = [r.entry.id for r in on.search(query, 3, "hybrid", flt, None)]
    without = [r.entry.id for r in off.search(query, 3, "hybrid", flt, None)]
    assert with_neighbours[0] == asked.id and answered.id in with_neighbours
    assert answered.id not in without
    assert elsewhere.id not in with_neighbours  # another event time is not a neighbour
    m.forget(answered.id)  # archived: never returned; the next visible turn is the neighbour
    after = [r.entry.id for r in on.search(query, 3, "hybrid", flt, None)]
    assert answered.id not in after and later.id in after


def test_hybrid_search_loads_only_the_entries_it_returns(make_memory: Any) -> None:
    m = make_memory()
    m.store_many(_filler(200))
    storage = m.ctx.storage
    loaded: list[int] = []
    real = storage.get_many

    def counting(ids: Any) -> Any:
        loaded.append(len(ids))
        return real(ids)

    storage.get_many = counting  # type: ignore[method-assign]
    try:
        Searcher(m.ctx, SearchOptions.plain()).search("deploy pipeline", 5, "hybrid",
                                                      build_filter(m.ctx), None)
    finally:
        storage.get_many = real  # type: ignore[method-assign]
    assert loaded == [5]


def test_the_best_hits_do_not_depend_on_how_many_are_asked_for(make_memory: Any) -> None:
    """A caller asking for 300 results sees the same first five as one asking for five:
    asking deeper adds candidates at the bottom, it does not rescale the lists fused at
    the top (before, the deeper list's lower floor reordered the best hits). Exact
    vectors: an approximate index may itself return another 50th neighbour when asked
    for more (hnswlib searches wider for a larger k), which moves scores by ~1e-5."""
    import random

    rng = random.Random(5)
    vocabulary = [f"{stem}{suffix}" for stem in ("deploy", "index", "budget", "token",
                                                  "cache", "garden", "invoice", "route",
                                                  "schema", "ticket", "vendor", "sprint")
                  for suffix in ("", "s", "er", "ing", "ed")]
    m = make_memory(vectors="exact")
    m.store_many({"content": " ".join(rng.choices(vocabulary, k=rng.randint(4, 14))),
                  "type": "FACT"} for _ in range(600))
    for _ in range(25):
        query = " ".join(rng.sample(vocabulary, 3))
        few = [(r.score, r.entry.id) for r in m.search(query, 5)]
        many = [(r.score, r.entry.id) for r in m.search(query, 100)]
        assert len(few) == 5, query
        assert [s for s, _ in many[:5]] == pytest.approx([s for s, _ in few], abs=1e-7), query
        # equal scores (duplicate texts) may come in another order: what the deeper
        # lists know breaks their tie; every other place holds the same memory
        assert _untied(few, many[:6]) == _untied(many[:5], many[:6]), query


def _untied(hits: list[tuple[float, str]], among: list[tuple[float, str]]) -> list[str]:
    """The ids in ``hits`` whose score no other memory in ``among`` shares."""
    return [i for s, i in hits
            if all(abs(s - t) > 1e-7 for t, other in among if other != i)]


@pytest.mark.model
def test_default_memory_finds_a_related_memory_sharing_no_words(tmp_path: Path) -> None:
    with Memory(tmp_path / "default.db", agent_id="a") as m:
        stats = m.stats()
        assert stats["storage"] is not None and m.ctx.storage.name == "sqlite"
        assert stats["vectors"]["adapter"] == "usearch"
        assert stats["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"
        target = m.store("I adopted a puppy from the animal shelter", type="EPISODE")
        m.store("The quarterly budget review moved to Thursday", type="FACT")
        m.store("Our CI pipeline caches wheels between runs", type="FACT")
        found = m.search("new dog", 1)
        assert found[0].entry.id == target.id
        assert m.search("new dog", 3, mode="lexical") == []
    assert (tmp_path / "default.db.usearch").exists()


def test_distinct_false_returns_every_copy_and_the_querys_own_text(make_memory: Any) -> None:
    """search() leaves out a second copy and an echo of the query; ``distinct=False``
    (stores that address items by key) keeps them."""
    memory = make_memory()
    first = memory.store("zany zebra Xerxes", type="FACT", dedup=False)
    second = memory.store("zany zebra Xerxes", type="FACT", dedup=False)
    assert [r.entry.id for r in memory.search("zany zebra Xerxes")] == []
    both = {r.entry.id for r in memory.search("zany zebra Xerxes", distinct=False)}
    assert both == {first.id, second.id}
