"""Passages of long memories: the part of a text that bears on a query."""

from __future__ import annotations

from tulving.domain.passages import ELLIPSIS, best_span, excerpt, sentence_spans, stem

FILLER = " ".join(f"Paragraph {i} talks about the weather and nothing else." for i in range(30))
ANSWER = "The user's degree is in Business Administration from Ohio State."
TEXT = f"[2023-05-20] user: Some context first. {FILLER} {ANSWER} {FILLER}"


def test_sentences_cover_the_text_in_order() -> None:
    spans = sentence_spans("One. Two!\nThree? four")
    texts = ["One.", " Two!", "\n", "Three?", " four"]
    got = ["One. Two!\nThree? four"[s:e] for s, e in spans]
    assert [t.strip() for t in got] == [t.strip() for t in texts if t.strip()]


def test_the_passage_holding_the_query_words_is_chosen() -> None:
    start, end = best_span(TEXT, ["degree", "business"], 200)
    assert ANSWER in TEXT[start:end]
    assert end - start <= 200


def test_words_match_by_stem_and_rarity_decides() -> None:
    # "weather" is in every filler sentence: it locates nothing; "administrations" matches
    # "Administration" by its stem.
    start, end = best_span(TEXT, ["weather", "administrations"], 120)
    assert "Business Administration" in TEXT[start:end]


def test_excerpt_keeps_the_opening_words_and_marks_what_is_left_out() -> None:
    shown = excerpt(TEXT, ["degree"], 200)
    assert shown.startswith("[2023-05-20] user: Some context first. Paragraph 0")
    assert f" {ELLIPSIS} " in shown and shown.endswith(ELLIPSIS)
    assert ANSWER in shown
    assert len(shown) < 300


def test_no_match_gives_the_opening() -> None:
    shown = excerpt(TEXT, ["zebra"], 100)
    assert shown.startswith("[2023-05-20] user: Some context first.")
    assert shown.endswith(ELLIPSIS)


def test_a_sentence_longer_than_the_passage_is_cut() -> None:
    text = "word " * 500
    start, end = best_span(text, ["word"], 50)
    assert (start, end) == (0, 50)


def test_stem_drops_common_endings_only_from_long_enough_words() -> None:
    assert stem("recommendations") == "recommend"
    assert stem("cooking") == "cook"
    assert stem("is") == "is"
