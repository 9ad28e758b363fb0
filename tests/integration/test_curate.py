"""curate() end to end: the budget is never exceeded and the right memories go in."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tulving import ValidationError

_WORDS = ("alpha bravo cobalt delta ember falcon garnet harbor indigo jasper kelp lumen "
          "mosaic nebula onyx prism quartz raven sierra tundra umber violet willow xenon "
          "yonder zephyr").split()


def _fill(m: Any, n: int = 300) -> None:
    """Varied notes (not near-duplicates of each other), all about incidents."""
    topics = ["billing service", "search cluster", "mobile app", "data warehouse", "auth flow"]
    items = []
    for i in range(n):
        words = " ".join(_WORDS[(i * k + k) % len(_WORDS)] for k in (3, 5, 7, 11, 13))
        items.append({
            "content": f"Incident {i} on the {topics[i % 5]}: {words}; fixed by worker {i % 17}",
            "type": "OBSERVATION", "tags": [topics[i % 5].split()[0]],
        })
    m.store_many(items)


def test_budget_is_never_exceeded_and_counted_with_headers(make_memory: Any) -> None:
    m = make_memory()
    _fill(m)
    tokenizer = m.ctx.tokenizer
    for budget in (50, 51, 64, 250, 1000, 4000):
        result = m.curate("billing incident", token_budget=budget)
        assert result.token_count == tokenizer.count(result.content) <= budget
        assert result.budget_remaining == budget - result.token_count


def test_negative_and_bad_budgets_raise(make_memory: Any) -> None:
    m = make_memory()
    for bad in (-1, 0, 49, 200_001, 2.5, "100", None, True):
        with pytest.raises(ValidationError):
            m.curate("x", token_budget=bad)
    with pytest.raises(ValidationError):
        m.curate(token_budget=100, mode="query")  # query mode needs a query
    with pytest.raises(ValidationError):
        m.curate("x", token_budget=100, mode="dream")


def test_large_budget_is_used_not_left_empty(make_memory: Any) -> None:
    """A peer fills ~1,050 tokens of an 8,000 budget: the pool must be large enough."""
    m = make_memory()
    _fill(m, 400)
    result = m.curate("incident on the billing service", token_budget=8000)
    assert result.token_count > 6000
    assert result.sources_consulted >= 300


def test_relevant_memory_is_not_swamped_by_important_ones(make_memory: Any) -> None:
    m = make_memory()
    for i in range(25):
        m.store(f"Quarterly roadmap item {i}: expand to market {i}", type="DECISION",
                importance=1.0, pinned=True)
    target = m.store("The staging database password rotates every Monday at 09:00",
                     type="OBSERVATION", importance=0.1)
    result = m.curate("when does the staging database password rotate?", token_budget=120)
    assert result.entries and result.entries[0].entry.id == target.id
    assert "rotates every Monday" in result.content


def test_deterministic_for_same_store_query_and_clock(make_memory: Any) -> None:
    m = make_memory()
    _fill(m, 120)
    a = m.curate("search cluster cache", token_budget=700)
    b = m.curate("search cluster cache", token_budget=700)
    assert a.content == b.content and [e.entry.id for e in a.entries] == [e.entry.id for e in b.entries]


def test_progressive_disclosure_and_omitted(make_memory: Any) -> None:
    m = make_memory()
    _fill(m, 200)
    result = m.curate("auth flow incident", token_budget=300)
    kinds = {e.disclosure for e in result.entries}
    assert "full" in kinds
    assert result.omitted > 0 and result.omitted + len(result.entries) <= result.sources_consulted


def test_oversize_best_memory_is_truncated_not_dropped(make_memory: Any) -> None:
    m = make_memory()
    m.store("zebra migration plan: " + "step " * 3000, type="PLAN")
    result = m.curate("zebra migration", token_budget=80)
    assert result.entries and result.entries[0].disclosure == "truncated"
    assert "zebra migration plan" in result.content and result.token_count <= 80


def test_secrets_are_redacted_in_curated_text_but_not_in_get(make_memory: Any) -> None:
    m = make_memory()
    secret = "sk-proj-Abcdefghijklmnopqrstuvwx1234567890"
    m.store(f"deploy key for CI is {secret}", type="FACT", key="ci/key")
    assert secret in m.get("ci/key").content
    result = m.curate("CI deploy key", token_budget=200)
    assert secret not in result.content and "REDACTED" in result.content


def test_stale_memories_are_marked_without_rewriting_tags(make_memory: Any, clock: Any) -> None:
    m = make_memory()
    old = m.store("the legacy cron job cleans /tmp nightly", type="FACT", tags=["ops"])
    clock.advance(timedelta(days=200))
    result = m.curate("legacy cron job", token_budget=200)
    assert "stale" in result.content
    assert m.ctx.storage.get(old.id).tags == ("ops",)


def test_orient_briefs_without_a_query(make_memory: Any) -> None:
    m = make_memory()
    m.store("Always run migrations before deploying", type="PROCEDURE", pinned=True)
    m.store("We use PostgreSQL 16", type="DECISION", key="db/engine")
    m.store("Ship passkeys in the next release", type="PLAN", key="auth/passkeys")
    m.store("Login latency spiked yesterday", type="OBSERVATION")
    _fill(m, 50)
    result = m.curate(mode="orient", token_budget=600)
    assert result.token_count <= 600 and result.mode == "orient"
    for text in ("Always run migrations", "PostgreSQL 16", "passkeys", "db/engine"):
        assert text in result.content
    sections = {e.section for e in result.entries}
    assert {"pinned", "decisions", "plans", "recent"} <= sections


def test_near_duplicates_do_not_crowd_out_others(make_memory: Any) -> None:
    m = make_memory()
    for _ in range(10):
        m.store("The payment webhook retries three times with backoff", type="FACT")
    m.store("The payment provider is Stripe", type="FACT")
    result = m.curate("payment webhook provider", token_budget=200)
    assert result.content.count("retries three times") == 1
    assert "Stripe" in result.content


def test_explicit_session_working_memory_comes_first(make_memory: Any) -> None:
    m = make_memory()
    _fill(m, 60)
    with m.session(goal="fix the flaky login test"):
        note = m.store("Reproduced the flake: it only fails when the clock skews", type="OBSERVATION")
        result = m.curate("billing incident", token_budget=400)
        assert result.entries[0].entry.id == note.id
    after = m.curate("billing incident", token_budget=400)
    assert after.entries[0].entry.id != note.id


def test_disputed_memories_are_marked(make_memory: Any) -> None:
    m = make_memory()
    a = m.store("The API rate limit is 100 requests per minute", type="FACT")
    b = m.store("The API rate limit is 1000 requests per minute", type="FACT")
    import attrs

    m.ctx.storage.replace(attrs.evolve(m.ctx.storage.get(a.id), conflict_ids=(b.id,)))
    result = m.curate("API rate limit", token_budget=200)
    assert "disputed" in result.content
