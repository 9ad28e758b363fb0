"""Dividing a briefing's budget: shares by weight, capped at each section's need."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tulving.domain.errors import ValidationError
from tulving.domain.shares import allocate


def test_an_empty_section_holds_nothing_and_its_share_goes_to_the_others():
    weights = {"profile": 0.4, "decisions": 0.15, "recent": 0.0}
    out = allocate(1000, {"profile": 5000, "decisions": 0, "recent": 9000}, weights)
    assert out == {"profile": 1000, "decisions": 0, "recent": 0}


def test_a_satisfied_section_frees_budget_for_the_rest_then_the_unweighted():
    weights = {"a": 0.5, "b": 0.5, "turns": 0.0}
    assert allocate(1000, {"a": 100, "b": 5000, "turns": 5000}, weights) == {
        "a": 100, "b": 900, "turns": 0}
    assert allocate(1000, {"a": 100, "b": 200, "turns": 5000}, weights) == {
        "a": 100, "b": 200, "turns": 700}


def test_competing_sections_split_by_weight():
    out = allocate(1000, {"a": 5000, "b": 5000}, {"a": 0.75, "b": 0.25})
    assert out == {"a": 750, "b": 250}


def test_a_negative_budget_is_refused():
    with pytest.raises(ValidationError):
        allocate(-1, {"a": 1}, {"a": 1.0})


@given(st.integers(0, 5000),
       st.dictionaries(st.sampled_from("abcdefg"), st.integers(0, 3000), min_size=1),
       st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7))
def test_never_over_the_budget_nor_over_a_need(budget, demands, raw_weights):
    weights = dict(zip("abcdefg", raw_weights, strict=True))
    out = allocate(budget, demands, weights)
    assert sum(out.values()) <= budget
    assert all(0 <= out[k] <= demands[k] for k in demands)
    if sum(demands.values()) <= budget:
        assert out == demands  # everything fits: everyone gets what it needs
