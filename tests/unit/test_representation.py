"""The rule of what an entry's vector reads, and its setting."""

from __future__ import annotations

from pathlib import Path

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


def test_a_long_memory_takes_none_of_its_neighbours() -> None:
    import numpy as np

    from tulving.application.plumbing.representation import mix

    assert context_weight(0) == context_weight(CONTEXT_CHARS) == CONTEXT_WEIGHT
    assert context_weight(CONTEXT_CHARS + 1) == 0.0
    own, first = np.eye(2, dtype=np.float32)
    short, long = mix(own, [first], 100), mix(own, [first], 4 * CONTEXT_CHARS)
    assert short @ first > 0.2 and long @ first == 0.0 and long @ own == pytest.approx(1.0)


def test_store_many_gives_a_long_memory_its_own_vector_and_a_short_one_context(
        tmp_path: Path) -> None:
    """Through the public API with the hashing embedder: after two short turns of one
    session, a long turn's stored vector is its plain embedding; a short turn leans."""
    import numpy as np

    from tulving import Memory

    long_text = "the deployment checklist covers " + "canary stages and rollbacks " * 30
    with Memory(tmp_path / "m.db", agent_id="a", embedder="hashing", vectors="exact") as m:
        ids = m.store_many([{"content": "we talked about the release", "type": "EPISODE"},
                            {"content": "it went out on friday", "type": "EPISODE"},
                            {"content": long_text, "type": "EPISODE"},
                            {"content": "and it held", "type": "EPISODE"}])
        embed = m.ctx.embedder
        assert embed is not None
        own_long, own_short = (np.asarray(v) for v in embed.embed([long_text, "and it held"]))
        stored = m.ctx.storage.vectors_for([ids[2].id, ids[3].id])
        got_long = np.asarray(stored[ids[2].id], dtype=np.float32)
        got_short = np.asarray(stored[ids[3].id], dtype=np.float32)
    assert float(got_long @ own_long) == pytest.approx(1.0, abs=1e-3)
    assert float(got_short @ own_short) < 0.999


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
