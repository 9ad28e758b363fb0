"""Small pure helpers that storage adapters share (ours and third parties'), kept out of
the port module, which only declares."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def iter_batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size`` (the last one shorter), for batched writes."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def conflict_sides(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Each id of ``WriteOrder.link_conflicts``'s pairs with the ids it must link to (both
    sides of every pair; a pair of one id with itself is no conflict)."""
    wanted: dict[str, list[str]] = {}
    for a, b in pairs:
        if a != b:
            wanted.setdefault(a, []).append(b)
            wanted.setdefault(b, []).append(a)
    return wanted
