"""How well a procedure has worked, as a number ranking can use.

Laplace smoothing ((successes + 1) / (attempts + 2)) keeps an untried procedure at 0.5
instead of 0 or undefined, and lets one early failure lower a procedure without burying
it: evidence moves the estimate in proportion to how much of it there is.
"""

from __future__ import annotations

from tulving.domain.entry import MemoryEntry


def success_rate(success_count: int, failure_count: int) -> float:
    successes = max(0, success_count)
    attempts = successes + max(0, failure_count)
    return (successes + 1) / (attempts + 2)


def effectiveness(entry: MemoryEntry) -> float:
    """Laplace-smoothed success rate of a PROCEDURE entry, in (0, 1)."""
    return success_rate(entry.success_count, entry.failure_count)
