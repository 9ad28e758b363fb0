"""Contract suite for the ``Tokenizer`` port (``tulving.ports.tokenizer``).

The curation budget is only as safe as the tokenizer counting it, so the suite pins the
properties packing relies on. Subclass and supply one fixture, ``tokenizer``:

    from contract_tests.tokenizer import TokenizerContract

    class TestMyTokenizer(TokenizerContract):
        @pytest.fixture(scope="class")
        def tokenizer(self):
            return MyTokenizer()
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tulving.domain.errors import TulvingError, ValidationError
from tulving.ports.tokenizer import Tokenizer

#: Typical memory content: prose, code, markup, ids, CJK, emoji, combining marks.
TYPICAL_TEXTS = [
    "We decided to use OAuth device flow for the CLI because the browser flow fails over SSH.",
    "def retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n            return fn()\n"
    "        except TimeoutError:\n            continue\n",
    '{"id": "01HZX3K9", "created_at": "2026-03-01T12:00:00Z", "tags": ["auth", "db"], "n": 42}',
    "$ git log --oneline -5 && docker compose up -d postgres && pytest -x -q tests/unit",
    "commit 3f2a9c1d7e4b5a6f8c9d0e1f2a3b4c5d6e7f8091, request 550e8400-e29b-41d4-a716-446655440000",
    "我们决定使用OAuth进行身份验证，因为它更安全。数据库迁移计划在下周完成。",
    "認証にはOAuthを使うことに決めました。来週データベースを移行します。",
    "인증에는 OAuth를 사용하기로 결정했습니다.",
    "Мы решили использовать OAuth для аутентификации.",
    "Release party 🎉🚀 with the team 👨‍👩‍👧‍👦 in 🇫🇷, thumbs up 👍🏽",
    "Café naïve résumé — e\u0301 with a combining accent, Å, ﬁ ligature",
    "special tokens are plain text here: <|endoftext|> <|fim_prefix|> <|endofprompt|>",
    "   leading and trailing whitespace\n\n\n\t\ttabs   ",
]


class TokenizerContract:
    @pytest.fixture
    def tokenizer(self) -> Tokenizer:  # pragma: no cover - supplied by the subclass
        raise NotImplementedError("supply a `tokenizer` fixture")

    def test_satisfies_the_port(self, tokenizer: Tokenizer) -> None:
        assert isinstance(tokenizer, Tokenizer)
        assert isinstance(tokenizer.name, str) and tokenizer.name

    def test_empty_text_counts_zero(self, tokenizer: Tokenizer) -> None:
        assert tokenizer.count("") == 0
        assert tokenizer.truncate("", 10) == ""

    def test_counts_are_positive_ints(self, tokenizer: Tokenizer) -> None:
        for text in TYPICAL_TEXTS:
            count = tokenizer.count(text)
            assert isinstance(count, int) and not isinstance(count, bool)
            assert count >= 1, text

    def test_special_token_text_is_counted_not_refused(self, tokenizer: Tokenizer) -> None:
        assert tokenizer.count("<|endoftext|>") >= 1
        assert tokenizer.truncate("<|endoftext|> tail", 1000) == "<|endoftext|> tail"

    def test_count_is_deterministic(self, tokenizer: Tokenizer) -> None:
        for text in TYPICAL_TEXTS:
            assert tokenizer.count(text) == tokenizer.count(text)

    def test_count_is_monotone_under_appending(self, tokenizer: Tokenizer) -> None:
        for first in TYPICAL_TEXTS:
            for second in TYPICAL_TEXTS:
                assert tokenizer.count(first + second) >= tokenizer.count(first)
                assert tokenizer.count(first + "\n" + second) >= tokenizer.count(second)

    def test_truncate_to_zero_is_empty(self, tokenizer: Tokenizer) -> None:
        for text in TYPICAL_TEXTS:
            assert tokenizer.truncate(text, 0) == ""

    def test_truncate_with_room_returns_the_text(self, tokenizer: Tokenizer) -> None:
        for text in TYPICAL_TEXTS:
            assert tokenizer.truncate(text, tokenizer.count(text)) == text
            assert tokenizer.truncate(text, 10**9) == text

    def test_truncate_gives_a_prefix_within_the_limit(self, tokenizer: Tokenizer) -> None:
        for text in TYPICAL_TEXTS:
            total = tokenizer.count(text)
            for limit in range(total + 1):
                cut = tokenizer.truncate(text, limit)
                assert text.startswith(cut), (text, limit, cut)
                assert tokenizer.count(cut) <= limit, (text, limit, cut)

    def test_truncate_keeps_most_of_the_room(self, tokenizer: Tokenizer) -> None:
        """Not a one-token answer to a hundred-token room: at least half is used."""
        text = " ".join(TYPICAL_TEXTS[:5]) * 4
        for limit in (10, 50, 100):
            assert tokenizer.count(tokenizer.truncate(text, limit)) >= limit // 2

    def test_truncate_never_splits_a_character(self, tokenizer: Tokenizer) -> None:
        text = "日本語のテキスト🦜🎉👍🏽" * 5
        for limit in range(tokenizer.count(text) + 1):
            cut = tokenizer.truncate(text, limit)
            assert "\ufffd" not in cut
            cut.encode("utf-8")  # no lone surrogate
            assert text.startswith(cut)

    def test_negative_limit_is_a_validation_error(self, tokenizer: Tokenizer) -> None:
        with pytest.raises(ValidationError):
            tokenizer.truncate("some text", -1)

    def test_non_text_is_refused_with_a_typed_error(self, tokenizer: Tokenizer) -> None:
        with pytest.raises(TulvingError):
            tokenizer.count(b"bytes")  # type: ignore[arg-type]

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(text=st.text(max_size=300), limit=st.integers(min_value=0, max_value=80))
    def test_truncate_property(self, tokenizer: Tokenizer, text: str, limit: int) -> None:
        cut = tokenizer.truncate(text, limit)
        assert text.startswith(cut)
        assert tokenizer.count(cut) <= limit
        if tokenizer.count(text) <= limit:
            assert cut == text
