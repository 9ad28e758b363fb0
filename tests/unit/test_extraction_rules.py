"""The deterministic extraction rules: segmentation and first-person heuristics."""

from __future__ import annotations

from tulving.domain.effectiveness import success_rate
from tulving.domain.extraction_rules import (
    MAX_EPISODE_CHARS,
    Turn,
    chunk_text,
    extract_candidates,
    normalise_statement,
    split_turns,
)
from tulving.domain.types import MemoryType


def _types(text: str, subject: str = "user") -> dict[MemoryType, list]:
    out: dict[MemoryType, list] = {}
    for cand in extract_candidates(Turn(None, text), subject):
        out.setdefault(cand.type, []).append(cand)
    return out


def test_speaker_lines_become_turns_with_continuations():
    turns = split_turns("Ann: hello there\nstill Ann here\nBo: hi\n\nBo: again")
    assert turns == [Turn("Ann", "hello there\nstill Ann here"), Turn("Bo", "hi"),
                     Turn("Bo", "again")]


def test_plain_text_becomes_paragraph_turns():
    turns = split_turns("First paragraph\nwraps here.\n\nSecond one.")
    assert turns == [Turn(None, "First paragraph wraps here."), Turn(None, "Second one.")]


def test_long_turns_are_chunked_at_sentences_and_nothing_is_lost():
    text = " ".join(f"Sentence number {i} is here." for i in range(400))
    pieces = chunk_text(text)
    assert all(len(p) <= MAX_EPISODE_CHARS for p in pieces)
    assert " ".join(pieces) == text
    giant = "x" * (MAX_EPISODE_CHARS * 2 + 5)
    assert "".join(chunk_text(giant)) == giant


def test_preferences_have_the_speaker_as_entity():
    found = extract_candidates(Turn("Caroline", "I really love painting sunsets!"))
    pref = next(c for c in found if c.type is MemoryType.PREFERENCE)
    assert pref.entity == "Caroline"
    assert pref.content == "Caroline loves painting sunsets."
    assert pref.value == "positive"
    hate = _types("I hate painting sunsets.", "Caroline")[MemoryType.PREFERENCE][0]
    assert hate.attribute == pref.attribute and hate.value == "negative"


def test_my_x_is_y_is_a_structured_fact():
    fact = _types("My dog's name is Rex, by the way.")[MemoryType.FACT][0]
    assert (fact.entity, fact.attribute, fact.value) == ("user", "dog's name", "Rex")
    assert not _types("My goodness is that true?").get(MemoryType.FACT)


def test_work_and_home_facts():
    facts = {(c.attribute, c.value) for c in _types(
        "I work at Acme Corp. I live in Berlin.")[MemoryType.FACT]}
    assert facts == {("works at", "Acme Corp"), ("lives in", "Berlin")}


def test_decisions_and_plans():
    assert _types("We decided to use FastAPI for the new service.")[MemoryType.DECISION]
    assert _types("I'm going to run a marathon next month.")[MemoryType.PLAN]
    assert not _types("I was going to call you.").get(MemoryType.PLAN)
    assert not _types("Are you going to come?").get(MemoryType.PLAN)


def test_step_lists_are_procedures():
    text = "To release:\n1. tag the commit\n2. build wheels\n3. upload"
    assert _types(text)[MemoryType.PROCEDURE][0].content.endswith("3. upload")
    assert _types("First run tests, then build, finally deploy.")[MemoryType.PROCEDURE]


def test_small_talk_yields_nothing():
    assert extract_candidates(Turn("Bo", "Hey! Good to see you. How have you been?")) == []


def test_normalised_statement():
    assert normalise_statement("The  Build, is GREEN!") == "the build is green"


def test_laplace_smoothed_success_rate():
    assert success_rate(0, 0) == 0.5
    assert success_rate(9, 1) > success_rate(1, 0) > success_rate(0, 1)
