"""``SearchResult.similarity``: the cosine of the query and the entry, the same for the
same pair whatever else the store holds (what LangGraph's stores call ``score``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tulving.adapters.embedders.hashing import HashingEmbedder


def test_similarity_is_the_cosine_and_does_not_depend_on_the_rest(
    make_memory: Callable[..., Any],
) -> None:
    small = make_memory("small.db")
    large = make_memory("large.db")
    text = "Alice has been vegetarian since 2019"
    small.store(text, type="FACT")
    large.store(text, type="FACT")
    for i in range(30):
        large.store(f"unrelated note number {i} about the build pipeline", type="FACT")
    embedder = HashingEmbedder()
    expected = float(np.dot(embedder.embed_query("vegetarian"), embedder.embed([text])[0]))
    for memory in (small, large):
        for mode in ("hybrid", "semantic"):
            hit = next(h for h in memory.search("vegetarian", mode=mode)
                       if h.entry.content == text)
            assert hit.similarity is not None
            assert abs(hit.similarity - expected) < 1e-3, (mode, hit.similarity, expected)
    assert all(h.similarity is None for h in small.search("vegetarian", mode="lexical"))
