"""A deterministic embedding for the tests: LangGraph's store tests use one of this kind.

Each character has a random direction of its own (seeded by the character, so the same
on every run and in every process); a text is the frequency-weighted sum of its
characters' directions, normalised. Texts that share characters point alike, so the
upstream tests' expectations ("bbbbluuu" is nearest "blue car") hold, and an unindexed
field scores low but not zero (the directions are not orthogonal).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings


class LetterEmbeddings(Embeddings):
    def __init__(self, dims: int = 500) -> None:
        self.dims = dims
        self._directions: dict[str, np.ndarray] = {}

    def _direction(self, char: str) -> np.ndarray:
        if char not in self._directions:
            seed = int.from_bytes(hashlib.sha256(char.encode("utf-8")).digest()[:8], "big")
            self._directions[char] = np.random.default_rng(seed).normal(
                0.0, 1 / math.sqrt(self.dims), self.dims)
        return self._directions[char]

    def _embed(self, text: str) -> list[float]:
        counts = Counter(text)
        if not counts:
            return [0.0] * self.dims
        total = sum(counts.values())
        vector = sum((n / total) * self._direction(c) for c, n in counts.items())
        norm = float(np.linalg.norm(vector))
        return [float(x) / norm for x in vector] if norm else [0.0] * self.dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, LetterEmbeddings) and other.dims == self.dims

    __hash__ = None  # type: ignore[assignment]
