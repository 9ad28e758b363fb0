"""One table of input limits (``tulving.domain.input_limits``), the same at every door.

Each value just outside a bound is refused by the library (``ValidationError``), the CLI
in a subprocess (exit 2 with a JSON error), MCP through the official client (a tool
error) and HTTP through the Python client (422), writing nothing; each bound itself is
taken. The expected bounds are written out here, not read from the table, so a changed
table cannot confirm itself; the documentation's table is the code's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.doors import back_channel
from tests.doors.door import Door, perform
from tulving.domain.input_limits import INPUT_LIMITS, markdown_table

DOORS = ["library", "cli", "mcp", "client"]

#: (case, operation, arguments): each is outside the table's bounds.
OUTSIDE: list[tuple[str, str, dict[str, Any]]] = [
    ("top_k 0", "search", {"query": "limits", "top_k": 0}),
    ("top_k 101", "search", {"query": "limits", "top_k": 101}),
    ("min_score below 0", "search", {"query": "limits", "min_score": -0.1}),
    ("min_score above 1", "search", {"query": "limits", "min_score": 1.5}),
    ("a search query of 4,001 characters", "search", {"query": "q" * 4001}),
    ("a curate query of 4,001 characters", "curate",
     {"query": "q" * 4001, "token_budget": 2000}),
    ("token_budget 49", "curate", {"query": "limits", "token_budget": 49}),
    ("token_budget 200,001", "curate", {"query": "limits", "token_budget": 200_001}),
]

#: The bounds themselves: taken at every door.
AT_BOUNDS: list[tuple[str, str, dict[str, Any]]] = [
    ("top_k 1 and min_score 0", "search", {"query": "limits", "top_k": 1, "min_score": 0.0}),
    ("top_k 100 and min_score 1", "search",
     {"query": "limits", "top_k": 100, "min_score": 1.0}),
    ("a query of 4,000 characters", "search", {"query": "q" * 4000}),
    ("token_budget 50", "curate", {"query": "limits", "token_budget": 50}),
    ("token_budget 200,000", "curate", {"query": "limits", "token_budget": 200_000}),
]


def test_the_table_holds_the_documented_bounds() -> None:
    bounds = {limit.name: (limit.low, limit.high) for limit in INPUT_LIMITS}
    assert bounds == {"query": (1, 4000), "top_k": (1, 100), "min_score": (0, 1),
                      "token_budget": (50, 200_000)}


def test_the_docs_table_is_the_domain_table() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "limits.md"
    assert markdown_table() in page.read_text(), (
        "docs/reference/limits.md's table differs from "
        "tulving.domain.input_limits.markdown_table(): paste the function's output")


@pytest.mark.parametrize("case", [c[0] for c in OUTSIDE])
@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_a_value_outside_the_table_is_refused_at_every_door(door: Door, case: str) -> None:
    _, op, args = next(c for c in OUTSIDE if c[0] == case)
    before = back_channel.fingerprint(door.path)
    outcome = perform(door, op, **args)
    assert outcome.family == "invalid", (door.name, case, outcome)
    assert back_channel.fingerprint(door.path) == before, (case, "something was written")


@pytest.mark.parametrize("case", [c[0] for c in AT_BOUNDS])
@pytest.mark.parametrize("door", DOORS, indirect=True)
def test_the_bounds_themselves_are_taken_at_every_door(door: Door, case: str) -> None:
    _, op, args = next(c for c in AT_BOUNDS if c[0] == case)
    outcome = perform(door, op, **args)
    assert outcome.ok, (door.name, case, outcome)
