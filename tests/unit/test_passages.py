"""Passages of long memories: the part of a text that bears on a query."""

from __future__ import annotations

import pytest

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


# -- issue 47: the part a question asks about, not the opening that restates its topic --
from tulving.domain.errors import ValidationError  # noqa: E402
from tulving.domain.passages import PLAIN, PassageChoice, passage_spans  # noqa: E402
from tulving.domain.question_parts import question_parts  # noqa: E402

CYCLING = """[2024-04-02] assistant: Cycling to work in a rainy city is very doable with the \
right cycling gear, and a few habits keep the commute pleasant even in winter rain. Here \
is what I would get for a rainy cycling commute:

1. A waterproof jacket with taped seams and a long back, so spray from the wheel stays off.
2. Full-length mudguards, which keep far more water off you than clip-on ones.
3. Overtrousers that pull on over your work clothes in under a minute.
4. Lights that stay on in the daytime, since rain cuts visibility for drivers.
5. Overshoes made of neoprene, because wet feet are the worst part of a rainy ride.
6. Puncture-resistant tyres such as the Marathon Plus, which shrug off glass on wet roads.
7. A pannier with a roll-top closure, to keep your laptop dry.

With this cycling gear, a rainy commute stops being a reason to take the bus. Cycling in \
the rain mostly takes preparation, and the gear pays for itself in a few months of fares."""

TOPIC_QUESTION = ("Going back to our conversation about cycling gear for a rainy commute, "
                  "which tyres did you recommend?")


def _shown(question: str, choice: PassageChoice | None = None, chars: int = 400) -> str:
    if choice is None:
        return excerpt(CYCLING, question_parts(question), chars)
    return excerpt(CYCLING, question_parts(question), chars, choice=choice)


def test_a_question_that_restates_the_topic_gets_the_item_not_the_opening() -> None:
    assert "Marathon Plus" in _shown(TOPIC_QUESTION)
    # the rule before issue 47: the opening says "cycling", "rainy", "commute", "gear"
    assert "Marathon Plus" not in _shown(TOPIC_QUESTION, PLAIN)


@pytest.mark.parametrize(("question", "answer"), [
    ("In our chat about cycling to work in the rain, what was the fifth item?", "neoprene"),
    ("What was number 6 on your rainy commute list?", "Puncture-resistant"),
    ("What was the last thing on that list of rainy cycling gear?", "roll-top"),
    ("Can you remind me what the third one was, from our cycling chat?", "Overtrousers"),
])
def test_an_ordinal_picks_that_item(question: str, answer: str) -> None:
    shown = _shown(question)
    assert answer in shown
    assert shown.count(". ") <= 4  # the item, not a stretch of the list


def test_among_two_lists_the_one_whose_lead_line_the_question_names() -> None:
    text = ("[2024-04-02] assistant: Packing for a trek is mostly about layers.\n\n"
            "Clothing:\n1. a rain shell\n2. a fleece\n3. merino base layers\n\n"
            "Gear:\n1. trekking poles\n2. a headlamp\n3. a sleeping bag rated to -5 C\n\n"
            "Have a good trek, and pack light.")
    gear = excerpt(text, question_parts("What was the third item under gear?"), 400)
    clothes = excerpt(text, question_parts("What was the third clothing item?"), 400)
    assert "sleeping bag" in gear and "merino" not in gear
    assert "merino" in clothes and "sleeping bag" not in clothes


def test_two_short_passages_when_no_passage_is_clearly_better() -> None:
    text = " ".join(
        [f"Filler sentence {i} is about nothing in particular." for i in range(12)]
        + ["The red door key is under the mat."]
        + [f"More filler {i} here too." for i in range(12)]
        + ["The blue door key is in the drawer."]
        + [f"Closing filler {i} as well." for i in range(6)])
    question = question_parts("Where is the door key?")
    spans = passage_spans(text, question, 200)
    assert len(spans) == 2 and all(end - start <= 100 for start, end in spans)
    shown = excerpt(text, question, 200)
    assert "under the mat" in shown and "in the drawer" in shown
    assert shown.count(ELLIPSIS) == 3  # head … first … second …
    one = passage_spans(text, question, 200, PassageChoice(spread=2.0))
    assert len(one) == 1


def test_a_clear_winner_is_shown_alone() -> None:
    assert len(passage_spans(TEXT, question_parts("Where is my degree from?"), 200)) == 1


def test_numbers_match_whole_numbers_only() -> None:
    text = ("Route 12 goes north. " * 10) + "Route 1 goes to the station. " + (
        "Route 15 goes south. " * 10)
    start, end = best_span(text, ["1"], 40)
    assert text[start:end].strip() == "Route 1 goes to the station."


def test_passage_choice_weights_must_be_positive() -> None:
    with pytest.raises(ValidationError):
        PassageChoice(opening_weight=0.0)
    with pytest.raises(ValidationError):
        PassageChoice(focus_weight=-1.0)


def test_an_excerpt_of_an_empty_or_unmatched_text_is_its_opening() -> None:
    assert excerpt("", question_parts("anything"), 50) == ""
    assert excerpt("Short text.", "which tyres?", 50) == "Short text."


# -- any text, any question: passages stay inside the text and within their length --
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = ["1. ", "2) ", "- ", "* ", "### Day 3: ", "Monday: ", "\n", "\n\n", ". ", "? ",
           "e.g., ", "0.2 ", "the fifth one", "alpha", "beta", "数据", "🦜", "   "]
_TEXTS = st.one_of(st.text(max_size=600),
                   st.lists(st.sampled_from(_PIECES), max_size=120).map("".join))
_QUESTIONS = st.one_of(st.text(max_size=120),
                       st.lists(st.sampled_from([*_PIECES, "what was", "which", "day 5",
                                                 "number 2", "the last"]),
                                max_size=20).map(" ".join))


@settings(max_examples=300, deadline=None)
@given(_TEXTS, _QUESTIONS, st.integers(1, 500))
def test_passages_are_inside_the_text_and_no_longer_than_asked(
        text: str, question: str, max_chars: int) -> None:
    spans = passage_spans(text, question_parts(question), max_chars)
    assert 1 <= len(spans) <= 2
    assert all(0 <= start <= end <= len(text) for start, end in spans)
    assert sum(end - start for start, end in spans) <= max_chars
    assert spans == sorted(spans)
    shown = excerpt(text, question, max_chars)
    assert len(shown) <= max_chars + len(" ".join(text.split()[:8])) + 8
