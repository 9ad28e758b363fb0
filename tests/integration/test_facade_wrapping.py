"""The facade's wrappers are derived, not hand-kept (issue 53): every public method of
``Memory`` refuses invalid Unicode unless it is named in ``UNGUARDED`` (paths, a sync
client, a line import) or belongs to the operator surface; every operation the trace
table names is a public method, and traced."""

from __future__ import annotations

from pathlib import Path

import pytest

from tulving import Memory, ValidationError
from tulving.application.memory import UNGUARDED
from tulving.application.operator import OPERATOR_NAMES
from tulving.application.plumbing.operation_spans import OPERATIONS
from tulving.application.plumbing.text_guard import guarded, public_methods


def test_every_public_method_is_guarded_unless_named() -> None:
    names = public_methods(Memory)
    assert set(names) >= UNGUARDED  # an exemption names a method that exists
    unguarded = {n for n in names if not guarded(getattr(Memory, n))}
    assert unguarded == UNGUARDED | set(OPERATOR_NAMES) - {"capabilities"}


def test_the_trace_table_names_public_methods() -> None:
    assert set(OPERATIONS) <= set(public_methods(Memory))
    for name in OPERATIONS:  # traced over the guard: both wrappers are on the method
        assert hasattr(getattr(Memory, name), "__wrapped__")


@pytest.mark.parametrize("call", [
    lambda m: m.maintenance("inspect\ud800"),
    lambda m: m.retry_enrichment("kind\ud800"),
    lambda m: m.wait_enriched(0.0, kinds=["a\ud800"]),
])
def test_a_method_the_old_list_left_out_is_guarded(tmp_path: Path, call: object) -> None:
    with Memory(str(tmp_path / "m.db"), agent_id="a", embedder="hashing",
                vectors="exact") as memory, pytest.raises(ValidationError,
                                                          match="not valid Unicode"):
        call(memory)  # type: ignore[operator]
