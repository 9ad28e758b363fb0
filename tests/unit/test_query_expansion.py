"""The rules an LLM's expansion reply must pass before search uses it."""

from __future__ import annotations

from tulving.domain.query_expansion import (
    MAX_ANSWER_CHARS,
    MAX_KEYWORD_CHARS,
    MAX_KEYWORDS,
    Expansion,
    expansion_messages,
    parse_expansion,
)


def test_a_good_reply_is_kept_in_order():
    got = parse_expansion({"keywords": ["sneakers", "shoes"], "answer": "I bought sneakers."})
    assert got == Expansion(keywords=("sneakers", "shoes"), answer="I bought sneakers.")


def test_items_of_the_wrong_type_are_dropped_and_whitespace_folded():
    got = parse_expansion({"keywords": [1, None, "  red \n shoes ", "", {"x": 1}],
                           "answer": ["not", "text"]})
    assert got == Expansion(keywords=("red shoes",), answer="")


def test_duplicates_go_and_long_replies_are_cut():
    many = [f"word{i}" for i in range(MAX_KEYWORDS + 5)]
    got = parse_expansion({"keywords": ["a", "a", "x" * 500, *many],
                           "answer": "y " * MAX_ANSWER_CHARS})
    assert got is not None
    assert len(got.keywords) == MAX_KEYWORDS and got.keywords[:2] == ("a", "x" * MAX_KEYWORD_CHARS)
    assert len(got.answer) == MAX_ANSWER_CHARS


def test_nothing_usable_is_none():
    assert parse_expansion({"keywords": [], "answer": "  "}) is None
    assert parse_expansion({"keywords": "shoes", "answer": 3}) is None
    assert parse_expansion(["shoes"]) is None
    assert parse_expansion(None) is None


def test_the_prompt_carries_the_question_and_asks_for_json_fields():
    messages = expansion_messages("What footwear did Ann buy?")
    assert messages[-1] == {"role": "user", "content": "Question: What footwear did Ann buy?"}
    assert '"keywords"' in messages[0]["content"] and '"answer"' in messages[0]["content"]
