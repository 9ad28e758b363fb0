"""The rule of what an entry's vector reads, and its setting."""

from __future__ import annotations

import pytest

from tulving.domain.errors import ConfigError
from tulving.domain.representation import (
    CONTEXT_CHARS,
    CONTEXT_WINDOW,
    contextual_text,
    parse_writing,
)


def test_context_comes_first_then_the_memory() -> None:
    assert contextual_text(["A: how long?", "B: which one?"], "A: two years") == (
        "A: how long? B: which one? A: two years")
    assert contextual_text([], "alone") == "alone"


def test_a_long_context_keeps_only_its_end_so_the_memory_stays_in_the_model_window() -> None:
    answer = "Assistant: " + " ".join(f"step{i} of the long answer." for i in range(200))
    memory = "User: thanks, and which flour did you say?"
    text = contextual_text(["User: how do I bake bread?", answer], memory)
    assert text.endswith(" " + memory)
    context = text[: -len(memory) - 1]
    assert len(context) <= CONTEXT_CHARS
    assert answer.endswith(context)  # the end nearest the memory, nothing else
    assert answer[-len(context) - 1] == " "  # cut at a word boundary, not inside a word
    assert "bake bread" not in text


def test_a_context_that_fits_is_read_whole_and_an_unbroken_one_is_cut_anyway() -> None:
    before = ["x" * (CONTEXT_CHARS - 10)]
    assert contextual_text(before, "m") == before[0] + " m"
    unbroken = "y" * (CONTEXT_CHARS * 3)
    assert contextual_text([unbroken], "m") == "y" * CONTEXT_CHARS + " m"


def test_window_defaults_and_accepts_zero_to_switch_off() -> None:
    assert parse_writing({}) == CONTEXT_WINDOW
    assert parse_writing({"context_window": 0}) == 0
    assert parse_writing({"context_window": 8}) == 8


@pytest.mark.parametrize("bad", [
    {"context_window": -1}, {"context_window": 9}, {"context_window": True},
    {"context_window": "2"}, {"context_window": 2.0}, {"window": 2},
])
def test_bad_settings_are_config_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        parse_writing(bad)


def test_writing_options_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="mapping"):
        parse_writing(["context_window", 2])
