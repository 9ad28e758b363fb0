"""Reading a question for passage choice: its preamble, its focus words, its ordinal."""

from __future__ import annotations

import pytest

from tulving.domain.question_parts import LAST, question_parts


def test_a_restated_topic_is_the_preamble_and_the_rest_asks() -> None:
    parts = question_parts("Going back to our conversation about growing tomatoes on a "
                           "balcony, can you remind me which fertiliser you recommended?")
    assert {"growing", "tomatoes", "balcony", "conversation"} <= parts.preamble
    assert {"fertiliser", "recommended"} <= parts.ask
    assert parts.focus == ("fertiliser",)
    assert parts.ordinal is None


def test_a_trailing_reference_is_preamble_too() -> None:
    parts = question_parts("What was the fourth museum on the list of Berlin museums you "
                           "gave me?")
    assert {"berlin", "museums", "list"} <= parts.preamble
    assert parts.focus == ("museum",)
    assert parts.ordinal == 4
    when = question_parts("Which bread flour did you suggest when we talked about baking?")
    assert "baking" in when.preamble and "flour" in when.ask


def test_a_question_without_a_preamble_asks_with_every_word() -> None:
    parts = question_parts("How many skeins of yarn did I find in my stash?")
    assert parts.preamble == frozenset()
    assert set(parts.terms) == parts.ask
    assert parts.focus[0] == "skeins"


@pytest.mark.parametrize(("question", "ordinal", "label"), [
    ("Can you remind me what the fifth one was?", 5, None),
    ("What was the 27th parameter on that list?", 27, None),
    ("What was number 8 on your list?", 8, None),
    ("And #3?", 3, None),
    ("What did you suggest for day 5?", 5, "day"),
    ("What was step six again?", 6, "step"),
    ("In week 10, how long was the long run?", 10, "week"),
    ("What was the last tip you gave me?", LAST, None),
    ("Remind me of the final option.", LAST, None),
    ("What was the tenth album?", 10, None),
])
def test_ordinals_by_word_number_label_and_last(question: str, ordinal: int,
                                                label: str | None) -> None:
    parts = question_parts(question)
    assert (parts.ordinal, parts.label) == (ordinal, label)


@pytest.mark.parametrize("question", [
    "What did I plan for my first year of beekeeping?",
    "How many days ago did I read the March 15th issue of The New Yorker?",
    "Which item did I purchase first, the dog bed or the training pads?",
    "What certification did I complete last month?",
    "I run 5 km three times a week; how can I get faster?",
    "Did I spend 20 percent more last year?",
])
def test_words_that_are_not_a_list_position(question: str) -> None:
    assert question_parts(question).ordinal is None


def test_an_empty_or_stop_word_question_still_reads() -> None:
    assert question_parts("").terms == ()
    parts = question_parts("what is it?")
    assert parts.terms and parts.ordinal is None
