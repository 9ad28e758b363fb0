"""Property tests: the budget holds for any candidates, budget and tokenizer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tulving.adapters.tokenizers.heuristic import HeuristicTokenizer
from tulving.adapters.tokenizers.tiktoken import TiktokenTokenizer
from tulving.domain.entry import MemoryEntry
from tulving.domain.packing import SplitsAtSpaces, pack, render_index_line, splits_at_spaces
from tulving.domain.ranking import Candidate, rank
from tulving.domain.types import MemoryType

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TOKENIZERS = {"cl100k": TiktokenTokenizer("cl100k_base"), "heuristic": HeuristicTokenizer()}

SAMPLES = [
    "Use OAuth device flow for the CLI.",
    "```python\ndef f(x):\n    return x * 2\n```",
    "数据库迁移计划在下周完成。",
    "Deploy 🚀🎉 done 👍🏽 👨‍👩‍👧‍👦",
    "x",
    "word " * 400,
    "<|endoftext|> special text",
    "e\u0301\u0301\u0301 combining",
    "a\n\n\nb\t\tc   ",
    "3f2a9c1d7e4b5a6f8c9d0e1f2a3b4c5d6e7f8091 550e8400-e29b-41d4-a716-446655440000",
]

content = st.one_of(
    st.sampled_from(SAMPLES),
    st.text(min_size=1, max_size=120).filter(lambda t: t.strip() != ""),
    st.text(alphabet="日本語中文한국어🦜🎉 abc\n", min_size=1, max_size=300).filter(str.strip),
    st.builds(lambda w, n: (w + " ") * n, st.sampled_from(["token", "数据", "🦜", "ab1"]),
              st.integers(1, 1500)),
)  # fmt: skip

candidate = st.tuples(
    content,
    st.sampled_from(list(MemoryType)),
    st.one_of(st.none(), st.from_regex(r"[a-z]{1,8}(/[a-z0-9]{1,8}){0,2}", fullmatch=True)),
    st.floats(0.0, 1.0),
    st.integers(0, 400),
)


def make_entries(specs: list[tuple[str, MemoryType, str | None, float, int]]) -> list[Candidate]:
    out = []
    for i, (text, kind, key, relevance, age) in enumerate(specs):
        at = NOW - timedelta(days=age)
        out.append(
            Candidate(
                MemoryEntry(
                    id=f"e{i:04d}",
                    content=text,
                    type=kind,
                    agent_id="agent",
                    partition="p",
                    key=key,
                    created_at=at,
                    updated_at=at,
                    valid_from=at,
                    last_accessed_at=at,
                ),
                relevance,
            )
        )
    return out


def with_duplicates(specs: list[Any], data: st.DataObject) -> list[Any]:
    """Repeat some candidates (same text, other key/relevance) to exercise dedup."""
    if specs and data.draw(st.booleans()):
        for _ in range(data.draw(st.integers(1, 4))):
            text = data.draw(st.sampled_from(specs))[0]
            specs.append((text, MemoryType.FACT, None, data.draw(st.floats(0, 1)), 1))
    return specs


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(candidate, min_size=0, max_size=25),
    budget=st.integers(0, 5000),
    tokenizer_name=st.sampled_from(sorted(TOKENIZERS)),
    data=st.data(),
)
def test_budget_holds_determinism_and_best_kept(
    specs: list[Any], budget: int, tokenizer_name: str, data: st.DataObject
) -> None:
    tokenizer = TOKENIZERS[tokenizer_name]
    ranked = rank(make_entries(with_duplicates(specs, data)), NOW)
    packed = pack(ranked, budget=budget, tokenizer=tokenizer, now=NOW)

    assert packed.token_count == tokenizer.count(packed.content) <= budget
    assert packed == pack(ranked, budget=budget, tokenizer=tokenizer, now=NOW)
    assert len(packed.included) + packed.omitted == len(ranked)
    assert len(set(packed.included_ids)) == len(packed.included_ids)
    if ranked and budget >= tokenizer.count(render_index_line(ranked[0].entry, NOW)):
        assert ranked[0].id in packed.included_ids


@settings(max_examples=150, deadline=None)
@given(
    specs=st.lists(candidate, min_size=1, max_size=8),
    tokenizer_name=st.sampled_from(sorted(TOKENIZERS)),
)
def test_small_budgets_never_overflow(specs: list[Any], tokenizer_name: str) -> None:
    tokenizer = TOKENIZERS[tokenizer_name]
    ranked = rank(make_entries(specs), NOW)
    for budget in range(0, 60, 3):
        packed = pack(ranked, budget=budget, tokenizer=tokenizer, now=NOW)
        assert packed.token_count == tokenizer.count(packed.content) <= budget


class _Counts:
    """The same tokenizer without ``splits_at_spaces``: packing counts every line."""

    def __init__(self, inner: TiktokenTokenizer) -> None:
        self.inner = inner

    def count(self, text: str) -> int:
        return self.inner.count(text)

    def truncate(self, text: str, max_tokens: int) -> str:
        return self.inner.truncate(text, max_tokens)


class _SaysNo(_Counts):
    splits_at_spaces = False


def test_splits_at_spaces_is_a_declared_protocol() -> None:
    """Packing reads the capability from the protocol, the declared value included."""
    tiktoken = TiktokenTokenizer("cl100k_base")
    assert splits_at_spaces(tiktoken)
    assert not splits_at_spaces(_Counts(tiktoken))
    assert not splits_at_spaces(_SaysNo(tiktoken))  # the attribute alone is not the promise
    assert not splits_at_spaces(HeuristicTokenizer())


spaced_text = st.one_of(
    content,
    st.lists(st.one_of(st.text(max_size=12), st.sampled_from(["!\x1c!", "a\x1fb", "  ", "\n", "\n \n", "!\n", "\t"])),
             max_size=40).map(" ".join),
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(text=spaced_text, name=st.sampled_from(["cl100k_base", "o200k_base"]))
def test_every_run_between_spaces_costs_a_token(text: str, name: str) -> None:
    tokenizer = TiktokenTokenizer(name)
    assert isinstance(tokenizer, SplitsAtSpaces)
    runs = [part for part in text.split(" ") if part and not part.isspace()]
    assert tokenizer.count(text) >= len(runs)
    assert tokenizer.count("\n" + text) >= len(runs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(candidate, min_size=1, max_size=30), budget=st.integers(0, 3000))
def test_skipping_lines_by_their_words_changes_nothing(specs: list[Any], budget: int) -> None:
    tokenizer = TOKENIZERS["cl100k"]
    ranked = rank(make_entries(specs), NOW)
    assert pack(ranked, budget=budget, tokenizer=tokenizer, now=NOW) == pack(
        ranked, budget=budget, tokenizer=_Counts(tokenizer), now=NOW)
