"""The detection engine on its own (pure domain): rules as data, spans widened to the
whole token, overlaps merged, existing masks left alone, and without an installed rule
set only Tulving's context rules apply."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tulving.domain import rule_sets
from tulving.domain.detection import (
    Finding,
    Rule,
    RuleBook,
    apply_masks,
    enough_digits,
    find_all,
    regex_finder,
)
from tulving.domain.redaction import redact_with_count

PREFIX = Rule("demo_key", regex_finder(re.compile(r"dk_[a-z]{4}")), triggers=("dk_",))


def test_a_span_is_widened_to_its_token_but_not_across_an_assignment() -> None:
    text = "key=dk_abcdEFGH1234+/== and more"
    found = find_all(text, [PREFIX])
    assert found == [Finding("demo_key", 4, 23)]
    assert apply_masks(text, found) == "key=[REDACTED:demo_key] and more"


def test_overlaps_merge_and_masks_are_not_masked_again() -> None:
    wide = Rule("wide", regex_finder(re.compile(r"dk_\w+ x")), whole_token=False)
    text = "a dk_abcd x b"
    assert find_all(text, [PREFIX, wide]) == [Finding("wide", 2, 11)]  # the longest names it
    masked = apply_masks(text, find_all(text, [PREFIX, wide]))
    assert find_all(masked, [Rule("any", regex_finder(re.compile(r"\[\w+:\w+\]")))]) == []


def test_a_rule_book_runs_only_triggered_rules() -> None:
    ran: list[str] = []

    def spy(name: str) -> Rule:
        def find(text: str) -> Iterator[tuple[int, int]]:
            ran.append(name)
            return iter(())
        return Rule(name, find, triggers=(name.upper(),))

    book = RuleBook([spy("aa"), spy("bb"), Rule("gated", lambda t: [(0, 1)], triggers=("X",),
                                               gate=enough_digits(3))])
    book.find("only AA here, X12")
    assert ran == ["aa"]
    assert book.find("X123") == [Finding("gated", 0, 4)]


@pytest.fixture
def no_rule_sets() -> Iterator[None]:
    previous = rule_sets.current()
    rule_sets.install(lambda: rule_sets.RuleSets())
    yield
    rule_sets.install(lambda: previous)


def test_without_rule_sets_only_context_rules_apply(no_rule_sets: None) -> None:
    assert redact_with_count("password=hunter2 and sk_live_" + "a" * 30) == (
        "password=[REDACTED:password] and sk_live_" + "a" * 30, 1)
