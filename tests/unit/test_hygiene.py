"""Which memories are only the query again (``domain.hygiene.echoes``): a turn that is the
question word for word behind a date or a speaker's label is; a text with a phrase of its
own before a colon is not."""

from __future__ import annotations

import pytest

from tulving.domain.hygiene import echoes


@pytest.mark.parametrize("content", [
    "call mom about the trip",
    "Call mom about the trip?",
    "user: call mom about the trip",
    "Assistant: call mom about the trip",
    "[08 May 2023] Caroline: call mom about the trip",
    "[08 May 2023] call mom about the trip",
    "Mary Ann Lee: call mom about the trip",
    "Dr. Lee: call mom about the trip!",
])
def test_the_query_behind_a_date_or_a_speaker_is_an_echo(content: str) -> None:
    assert echoes("call mom about the trip", content)


@pytest.mark.parametrize("content", [
    "memory 3: call mom about the trip",
    "The plan for tomorrow: call mom about the trip",
    "todo list: call mom about the trip",
    "user: call mom about the trip at noon",
    "Caroline: call dad about the trip",
])
def test_a_text_that_says_more_is_not_an_echo(content: str) -> None:
    assert not echoes("call mom about the trip", content)
