"""LLM query expansion (opt-in) through the real openai client against the scripted stub
server: it finds what plain search misses, costs one call per distinct query, and every
failure of the model leaves plain search's results."""

from __future__ import annotations

import json

import pytest

from tulving.application.retrieval.options import SearchOptions
from tulving.application.retrieval.search import Searcher, build_filter
from tulving.domain.errors import ConfigError

QUESTION = "What footwear did Ann purchase?"
TARGET = "Got myself new sneakers at the mall on Saturday, bright red ones."
DISTRACTORS = [
    "Ann said the purchase order for the office chairs is late again.",
    "Ann wants to purchase a bigger monitor next month.",
    "The team lunch is on Friday at noon.",
    "Ann's purchase of the concert tickets went through.",
    "Bo fixed the flaky deploy script.",
    "Ann is reading a book about the history of maps.",
]
EXPANSION = {"keywords": ["sneakers", "shoes", "boots"],
             "answer": "I bought new sneakers at the mall."}


pytestmark = pytest.mark.usefixtures("fresh_warnings")


def _memory(make_memory, server, search=None, **llm_options):
    llm = {"base_url": server.base_url, "model": "stub-chat", "max_retries": 0,
           "json_retries": 0, "timeout": 5.0, **llm_options}
    m = make_memory(llm="openai", options={"llm": llm,
                                           "search": search or {"llm_expansion": True}})
    m.store_many([{"content": text, "type": "EPISODE"} for text in [*DISTRACTORS, TARGET]])
    return m


def _plain(m, query, top_k=4, options=None):
    """What search without expansion returns on the same store."""
    return [r.entry.content for r in Searcher(m.ctx, options).search(
        query, top_k, "hybrid", build_filter(m.ctx), None)]


def _contents(results):
    return [r.entry.content for r in results]


def test_expansion_finds_what_plain_search_misses(make_memory, server):
    m = _memory(make_memory, server)
    assert _plain(m, QUESTION, top_k=10)[-1] == TARGET  # last: it shares no query word
    server.queue_reply(json.dumps(EXPANSION))
    results = _contents(m.search(QUESTION, top_k=4))
    assert TARGET in results
    # the question's own best hits keep their places: expansion adds, it does not replace
    # (an expansion is fused by the hand-tuned fusion: the learned ranker never saw one)
    fused = SearchOptions.fused()
    assert results[:3] == sorted(_plain(m, QUESTION, 3, fused), key=results.index)
    request = server.requests_to("/chat/completions")[-1].body
    assert request["response_format"]["type"] == "json_schema"
    assert QUESTION in request["messages"][-1]["content"]
    stats = m.stats()["llm"]
    assert stats["calls"] == 1 and stats["failures"] == 0


def test_curate_uses_the_same_expansion_and_one_call_per_query(make_memory, server):
    m = _memory(make_memory, server)
    server.queue_reply(json.dumps(EXPANSION))
    assert TARGET in _contents(m.search(QUESTION, top_k=4))
    curated = m.curate(QUESTION, token_budget=400, explain=True)
    ranked = [c.preview for c in curated.candidates]
    assert ranked.index(TARGET) < 4  # plain search ranks it last of 7
    m.search("  What footwear did   Ann purchase? ", top_k=1)  # same words: remembered
    assert len(server.requests_to("/chat/completions")) == 1


@pytest.mark.parametrize("fault", ["error", "garbled", "wrong types", "empty"])
def test_a_failing_model_leaves_plain_results(make_memory, server, fault):
    m = _memory(make_memory, server)
    expected = _plain(m, QUESTION)
    if fault == "error":
        server.fail_next(status=500)
    elif fault == "garbled":
        server.garble_next()
    elif fault == "wrong types":
        server.queue_reply(json.dumps({"keywords": "sneakers", "answer": 7}))
    else:
        server.queue_reply(json.dumps({"keywords": [], "answer": "   "}))
    with pytest.warns(Warning, match="query expansion failed") if fault != "empty" else (
            _no_check()):
        assert _contents(m.search(QUESTION, top_k=4)) == expected


def test_a_failure_is_not_remembered(make_memory, server):
    m = _memory(make_memory, server)
    server.fail_next(status=500)
    with pytest.warns(Warning, match="query expansion failed"):
        assert TARGET not in _contents(m.search(QUESTION, top_k=4))
    server.queue_reply(json.dumps(EXPANSION))
    assert TARGET in _contents(m.search(QUESTION, top_k=4))
    assert m.stats()["llm"]["failures"] == 1


def test_a_slow_model_times_out_into_plain_search(make_memory, server):
    m = _memory(make_memory, server, timeout=0.3)
    expected = _plain(m, QUESTION)
    server.delay_next(seconds=2.0)
    server.queue_reply(json.dumps(EXPANSION))
    with pytest.warns(Warning, match="query expansion failed"):
        assert _contents(m.search(QUESTION, top_k=4)) == expected


def test_a_spent_budget_means_plain_search(make_memory, server):
    llm = {"base_url": server.base_url, "model": "stub-chat", "max_retries": 0,
           "json_retries": 0, "timeout": 5.0, "max_calls": 1}
    m = make_memory(llm="openai", options={"llm": llm, "search": {"llm_expansion": True}})
    m.store_many([{"content": text, "type": "EPISODE"} for text in [*DISTRACTORS, TARGET]])
    server.queue_reply(json.dumps({"keywords": ["chairs"], "answer": "chairs"}))
    m.search("What is late?", top_k=3)
    expected = _plain(m, QUESTION)
    server.queue_reply(json.dumps(EXPANSION))
    with pytest.warns(Warning, match="skipped"):
        assert _contents(m.search(QUESTION, top_k=4)) == expected
    assert len(server.requests_to("/chat/completions")) == 1


def test_off_by_default_and_never_called(make_memory, server):
    llm = {"base_url": server.base_url, "model": "stub-chat", "max_retries": 0}
    m = make_memory(llm="openai", options={"llm": llm})
    m.store_many([{"content": text, "type": "EPISODE"} for text in [*DISTRACTORS, TARGET]])
    m.search(QUESTION, top_k=3)
    m.curate(QUESTION, token_budget=100)
    assert server.requests_to("/chat/completions") == []


@pytest.mark.parametrize("search", [
    {"llm_expansion": "yes"},
    {"llm_expansion": True, "expansion_weight": 0},
    {"llm_expansion": True, "expansion_weight": "high"},
    {"llm_expansion": True, "expansion_weight": 9.0},
    {"expand": True},
    ["llm_expansion"],
])
def test_bad_search_settings_are_refused(make_memory, search):
    with pytest.raises(ConfigError, match="search"):
        make_memory(options={"search": search})


def test_expansion_without_an_llm_is_refused_at_startup(make_memory):
    m = make_memory(options={"search": {"llm_expansion": True}})
    with pytest.raises(ConfigError, match="needs an LLM"):
        m.startup()


class _no_check:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
