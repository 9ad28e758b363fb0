"""The rule of what an entry's vector reads, and its setting."""

from __future__ import annotations

import pytest

from tulving.domain.errors import ConfigError
from tulving.domain.representation import (
    CONTEXT_CHARS,
    CONTEXT_WEIGHT,
    CONTEXT_WINDOW,
    context_weight,
    parse_writing,
)


def test_a_memory_leans_toward_its_predecessors_and_stays_itself() -> None:
    import numpy as np

    from tulving.application.plumbing.representation import mix

    own, first, second = np.eye(3, dtype=np.float32)
    mixed = mix(own, [first, second])
    assert np.isclose(np.linalg.norm(mixed), 1.0)
    expected = own + CONTEXT_WEIGHT * (first + second)
    assert np.allclose(mixed, expected / np.linalg.norm(expected))
    assert mixed @ own > mixed @ first == pytest.approx(mixed @ second)  # itself first
    assert np.allclose(mix(own, []), own)


def test_a_long_memory_takes_its_neighbours_in_proportion() -> None:
    import numpy as np

    from tulving.application.plumbing.representation import mix

    assert context_weight(0) == context_weight(CONTEXT_CHARS) == CONTEXT_WEIGHT
    assert context_weight(2 * CONTEXT_CHARS) == pytest.approx(CONTEXT_WEIGHT / 2)
    own, first = np.eye(2, dtype=np.float32)
    short, long = mix(own, [first], 100), mix(own, [first], 4 * CONTEXT_CHARS)
    assert long @ first < short @ first and long @ own > short @ own


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
