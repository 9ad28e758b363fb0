"""Packing into a token budget: layout, progressive disclosure, duplicates, edge budgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tulving.adapters.tokenizers.heuristic import HeuristicTokenizer
from tulving.adapters.tokenizers.tiktoken import TiktokenTokenizer
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.packing import (
    EXCERPT_MARKER,
    INDEX_HEADING,
    TRUNCATION_MARKER,
    Disclosure,
    pack,
    render_full_line,
    render_index_line,
)
from tulving.domain.ranking import Candidate, Ranked, rank
from tulving.domain.similarity import NearDuplicateIndex, jaccard, near_duplicate_groups, word_set
from tulving.domain.types import MemoryType

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CL100K = TiktokenTokenizer("cl100k_base")
HEURISTIC = HeuristicTokenizer()

TOPICS = [
    "The auth service uses OAuth device flow for the CLI because browser redirects fail over SSH.",
    "Postgres backups run nightly at 02:00 UTC with point-in-time recovery kept for 14 days.",
    "The embedding model is all-MiniLM-L6-v2 quantised to int8 and shipped inside the wheel.",
    "Release branches are cut on Thursdays after the security audit signs off on the changelog.",
    "The user prefers concise answers with code first and explanations after the snippet.",
    "Rate limits on the search API are 600 requests per minute per workspace token.",
    "The staging cluster runs on three nodes; the fourth was decommissioned in January.",
    "Flaky test test_sync_retry fails when the clock skews; pin the clock with ManualClock.",
]


def entry(
    entry_id: str,
    content: str,
    *,
    type: MemoryType = MemoryType.FACT,
    key: str | None = None,
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
        key=key,
        created_at=at,
        updated_at=at,
        valid_from=at,
        last_accessed_at=accessed,
        **fields,
    )


def ranked_of(entries: list[MemoryEntry]) -> list[Ranked]:
    """Rank with descending relevance so the given order is the ranking."""
    n = len(entries)
    return rank([Candidate(e, 1.0 - i / (n + 1)) for i, e in enumerate(entries)], NOW)


VOCAB = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()


def _tail(i: int) -> str:
    """Six words unique to note ``i``, so notes on one topic are not near-duplicates."""
    return " ".join(VOCAB[(i * 7 + j * (i % 5 + 1)) % len(VOCAB)] + str(i) for j in range(6))


def topics(count: int) -> list[MemoryEntry]:
    return [entry(f"m{i:03d}", f"{TOPICS[i % 8]} Note {_tail(i)}.") for i in range(count)]


@pytest.fixture(params=["cl100k", "heuristic"])
def tokenizer(request: pytest.FixtureRequest) -> Any:
    return CL100K if request.param == "cl100k" else HEURISTIC


def test_everything_fits_in_full_with_a_huge_budget(tokenizer: Any) -> None:
    entries = topics(8)
    packed = pack(ranked_of(entries), budget=100_000, tokenizer=tokenizer, now=NOW)
    assert packed.included_ids == tuple(e.id for e in entries)
    assert all(item.disclosure is Disclosure.FULL for item in packed.included)
    assert packed.omitted == 0
    lines = packed.content.splitlines()
    assert lines[0] == "## Memory (8 of 8)"
    assert INDEX_HEADING not in lines
    assert "not shown" not in packed.content
    assert packed.token_count == tokenizer.count(packed.content)


def test_full_line_format_has_type_key_date_and_content() -> None:
    decision = entry(
        "d1", "Use OAuth device flow.", type=MemoryType.DECISION, key="auth/strategy", age_days=0
    )
    assert render_full_line(decision, NOW) == (
        "- [decision · key=auth/strategy · 2026-03-01] Use OAuth device flow."
    )
    packed = pack(ranked_of([decision]), budget=500, tokenizer=CL100K, now=NOW)
    assert "- [decision · key=auth/strategy · 2026-03-01] Use OAuth device flow." in packed.content
    plain = entry("f1", "No key here.", age_days=0)
    assert render_full_line(plain) == "- [fact · 2026-03-01] No key here."


def test_stale_marker_is_computed_at_render_time() -> None:
    old = entry("o", "Old observation about caching.", type=MemoryType.FACT, age_days=200)
    decision = entry("d", "Old decision.", type=MemoryType.DECISION, age_days=200)
    pinned = entry("p", "Pinned fact.", age_days=200, pinned=True)
    assert "stale]" in render_full_line(old, NOW)
    assert "stale]" not in render_full_line(old, NOW - timedelta(days=150))
    assert "stale]" not in render_full_line(old)  # no clock, no marker
    assert "stale]" not in render_full_line(decision, NOW)  # decisions never decay
    assert "stale]" not in render_full_line(pinned, NOW)
    assert old.tags == ()  # the marker never becomes a tag
    assert "stale]" in pack(ranked_of([old]), budget=200, tokenizer=CL100K, now=NOW).content


def long_topics(count: int) -> list[MemoryEntry]:
    return [
        entry(f"m{i:03d}", f"{TOPICS[i % 8]} {TOPICS[(i + 3) % 8]} Note {_tail(i)}.")
        for i in range(count)
    ]


def test_progressive_disclosure_full_then_index_then_what_was_left_out(tokenizer: Any) -> None:
    entries = long_topics(60)
    # A budget whose leftover after the full entries holds index lines under both
    # tokenizers (full text comes first; the index takes only what it leaves).
    packed = pack(ranked_of(entries), budget=360, tokenizer=tokenizer, now=NOW)
    modes = [item.disclosure for item in packed.included]
    assert modes[0] is Disclosure.FULL
    assert Disclosure.INDEX in modes
    first_index = modes.index(Disclosure.INDEX)
    assert all(m is Disclosure.FULL for m in modes[:first_index])
    assert all(m is Disclosure.INDEX for m in modes[first_index:])
    # Rank order is kept.
    ids = list(packed.included_ids)
    assert ids == sorted(ids)
    lines = packed.content.splitlines()
    assert lines[0] == f"## Memory ({len(ids)} of 60)"
    assert lines[first_index + 1] == INDEX_HEADING
    assert lines[-1].startswith(f"({60 - len(ids)} not shown")
    assert packed.omitted == 60 - len(ids)
    assert packed.token_count == tokenizer.count(packed.content) <= 360
    index_line = render_index_line(entries[first_index], NOW)
    assert index_line in lines
    assert index_line.endswith("…")
    assert len(index_line.split("] ", 1)[-1].split()) == 9  # 8 words and the ellipsis


def test_budget_is_used_well() -> None:
    packed = pack(ranked_of(long_topics(200)), budget=2000, tokenizer=CL100K, now=NOW)
    assert 1900 <= packed.token_count <= 2000
    modes = {item.disclosure for item in packed.included}
    # Full text first: index lines only take what full memories leave over.
    assert Disclosure.FULL in modes
    assert sum(1 for i in packed.included if i.disclosure is Disclosure.FULL) >= 10


def test_everything_in_full_when_it_fits_exactly() -> None:
    """The index share is only taken when not everything fits in full."""
    entries = long_topics(6)
    ranked = ranked_of(entries)
    roomy = pack(ranked, budget=100_000, tokenizer=CL100K, now=NOW)
    tight = pack(ranked, budget=roomy.token_count + 40, tokenizer=CL100K, now=NOW)
    assert [item.disclosure for item in tight.included] == [Disclosure.FULL] * 6


def test_oversize_best_memory_is_truncated_not_dropped(tokenizer: Any) -> None:
    huge = entry("a-huge", "word " * 5000 + "END", type=MemoryType.DECISION, key="big/one")
    others = topics(5)
    packed = pack(ranked_of([huge, *others]), budget=120, tokenizer=tokenizer, now=NOW)
    assert packed.included[0].entry_id == "a-huge"
    assert packed.included[0].disclosure is Disclosure.TRUNCATED
    assert TRUNCATION_MARKER.strip() in packed.content
    assert "END" not in packed.content
    assert packed.token_count == tokenizer.count(packed.content) <= 120
    assert packed.token_count >= 90  # the room is used, not wasted


def test_near_duplicates_do_not_crowd_out_others(tokenizer: Any) -> None:
    base = "The deploy pipeline uses blue green releases behind the load balancer in eu-west-1"
    copies = [
        entry("a0", base),
        entry("a1", base.upper()),  # same content hash (case and whitespace normalised)
        entry("a2", "  " + base.replace(" ", "   ") + "  "),
        entry("a3", base + " now"),  # Jaccard 14/15 >= 0.9
    ]
    distinct = topics(3)
    packed = pack(ranked_of([*copies, *distinct]), budget=5000, tokenizer=tokenizer, now=NOW)
    assert packed.included_ids == ("a0", *(e.id for e in distinct))
    assert packed.duplicate_ids == ("a1", "a2", "a3")
    assert packed.omitted == 3
    assert "3 near-duplicates" in packed.content


def test_budget_zero_gives_empty_content() -> None:
    packed = pack(ranked_of(topics(5)), budget=0, tokenizer=CL100K)
    assert (packed.content, packed.token_count, packed.included, packed.omitted) == ("", 0, (), 5)


def test_no_candidates_gives_empty_content() -> None:
    packed = pack([], budget=500, tokenizer=CL100K)
    assert (packed.content, packed.token_count, packed.omitted) == ("", 0, 0)


@pytest.mark.parametrize("budget", range(0, 40))
def test_tiny_budgets_never_overflow(tokenizer: Any, budget: int) -> None:
    short = entry("s", "Use uv.", type=MemoryType.PREFERENCE)
    packed = pack(ranked_of([short, *topics(10)]), budget=budget, tokenizer=tokenizer, now=NOW)
    assert packed.token_count == tokenizer.count(packed.content) <= budget
    if budget >= tokenizer.count(render_index_line(short, NOW)):
        assert packed.included_ids[0] == "s"


def test_best_alone_without_header_when_header_does_not_fit() -> None:
    short = entry("s", "Use uv.", type=MemoryType.PREFERENCE)
    line = render_full_line(short, NOW)
    cost = CL100K.count(line)
    packed = pack(ranked_of([short, *topics(3)]), budget=cost, tokenizer=CL100K, now=NOW)
    assert packed.content == line
    assert packed.token_count == cost


@pytest.mark.parametrize("budget", [-1, -100, 1.5, "100", True, None])
def test_bad_budget_is_a_validation_error(budget: Any) -> None:
    with pytest.raises(ValidationError):
        pack(ranked_of(topics(2)), budget=budget, tokenizer=CL100K)


def test_deterministic(tokenizer: Any) -> None:
    ranked = ranked_of(topics(50))
    first = pack(ranked, budget=700, tokenizer=tokenizer, now=NOW)
    assert all(pack(ranked, budget=700, tokenizer=tokenizer, now=NOW) == first for _ in range(3))


class _MergingTokenizer:
    """A tokenizer whose joined count exceeds the sum of the pieces (a newline costs 3
    tokens only between two lines), to exercise the final-count repair."""

    name = "merging"

    def count(self, text: str) -> int:
        return len(text.split()) + 3 * text.count("\n")

    def truncate(self, text: str, max_tokens: int) -> str:
        words = text.split(" ")
        while words and self.count(" ".join(words)) > max_tokens:
            words.pop()
        return " ".join(words)


def test_final_count_is_verified_and_repaired() -> None:
    tok = _MergingTokenizer()
    for budget in range(0, 300, 7):
        packed = pack(ranked_of(topics(30)), budget=budget, tokenizer=tok, now=NOW)
        assert packed.token_count == tok.count(packed.content) <= budget


def test_similarity_helpers() -> None:
    a = word_set("The cat sat on the mat")
    assert a == frozenset({"the", "cat", "sat", "on", "mat"})
    assert jaccard(a, word_set("the CAT sat, on the mat!")) == 1.0
    assert jaccard(a, word_set("dogs bark")) == 0.0
    index = NearDuplicateIndex(0.9)
    index.add("x", "alpha beta gamma delta epsilon zeta eta theta iota kappa")
    assert index.find("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda") == "x"
    assert index.find("alpha beta gamma delta epsilon") is None
    groups = near_duplicate_groups([("1", "a b c"), ("2", "A  B c"), ("3", "d e f")])
    assert groups == {"2": "1"}
    with pytest.raises(ValidationError):
        NearDuplicateIndex(0.0)


def _long_answer(i: int) -> str:
    filler = " ".join(f"Point {j} is advice about {VOCAB[(j * (i + 3)) % 26]}{i}{j}."
                      for j in range(60))
    return f"Assistant answer {i}: {filler} The zebra fact {i} is here. {filler}"


def _excerpt_of(text: str) -> str:
    from tulving.domain.passages import excerpt

    return excerpt(text, ["zebra"], 200)


def test_long_memories_are_shown_as_excerpts_that_point_to_the_whole() -> None:
    """With an excerpt function, a memory whose line would take more than its share of the
    room shows the passage that bears on the query, marked with its id; short memories
    stay whole, and more memories fit than when the long ones are shown whole."""
    longs = [entry(f"l{i}", _long_answer(i)) for i in range(4)]
    shorts = topics(6)
    ranked = ranked_of([*longs, *shorts])
    with_excerpts = pack(ranked, budget=1000, tokenizer=CL100K, now=NOW, excerpt=_excerpt_of)
    whole = pack(ranked, budget=1000, tokenizer=CL100K, now=NOW)
    kinds = {item.entry_id: item.disclosure for item in with_excerpts.included}
    assert all(kinds[e.id] is Disclosure.EXCERPT for e in longs)
    assert all(kinds[e.id] is Disclosure.FULL for e in shorts)
    for i, e in enumerate(longs):
        assert f"The zebra fact {i} is here." in with_excerpts.content
        assert EXCERPT_MARKER.format(id=e.id) in with_excerpts.content
    assert with_excerpts.token_count == CL100K.count(with_excerpts.content) <= 1000
    shown_whole = [i for i in whole.included if i.disclosure is not Disclosure.INDEX]
    assert len(with_excerpts.included) == 10 > len(shown_whole)


def test_excerpts_leave_memories_under_their_share_whole() -> None:
    longs = [entry(f"l{i}", _long_answer(i)) for i in range(2)]
    packed = pack(ranked_of(longs), budget=100_000, tokenizer=CL100K, now=NOW,
                  excerpt=_excerpt_of)
    assert [i.disclosure for i in packed.included] == [Disclosure.FULL] * 2
