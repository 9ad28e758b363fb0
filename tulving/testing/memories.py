"""Memories for tests: real SQLite stores in a folder, opened with fast offline adapters.

Plugin packages (``plugins/*``) and third-party integrations test against a real
``Memory``; this is the one factory they share instead of each keeping a copy.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def memory_factory(folder: str | os.PathLike[str], *, agent_id: str,
                   **defaults: Any) -> Iterator[Any]:
    """Yield ``make(name="m.db", **kwargs)``, which opens a ``Memory`` on ``folder/name``
    (the hashing embedder and exact vectors unless ``defaults`` or ``kwargs`` say
    otherwise: fast, deterministic, no model to load); every Memory it opened is closed,
    newest first, when the block ends."""
    from tulving import Memory

    base = {"agent_id": agent_id, "embedder": "hashing", "vectors": "exact", **defaults}
    opened: list[Any] = []

    def make(name: str = "m.db", **kwargs: Any) -> Any:
        memory = Memory(os.path.join(os.fspath(folder), name), **{**base, **kwargs})
        opened.append(memory)
        return memory

    try:
        yield make
    finally:
        for memory in reversed(opened):
            memory.close()
