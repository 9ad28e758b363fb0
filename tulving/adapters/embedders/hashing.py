"""A model-free embedder: signed feature hashing of words, word pairs and character n-grams.

Why it exists: tests and minimal installs need an embedder that is deterministic across
processes, machines and Python versions, costs nothing to load and depends on numpy only.
It captures lexical overlap (shared words, shared word pairs, shared spellings such as
"migrate"/"migration"), not meaning.

Features of a text (lower-cased, NFKC-normalised):
- word unigrams, weight 1.0, where a word is a run of letters/digits/underscore or any
  single other non-space character (so emoji and CJK punctuation count);
- word bigrams, weight 0.5;
- character 3-grams of each word padded with ``<`` and ``>``, weight 0.25 each.

Each feature is hashed with blake2b (never the salted built-in ``hash()``) to a bucket and a
sign (the sign bit keeps collisions from adding up in expectation). The row is
L2-normalised. A text with no feature at all (``""`` or only whitespace) gets the fixed unit
vector of the reserved feature ``"\\x00empty"``: the contract wants a unit row for every
text, and all empty texts are then identical to each other and unlike any real text.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from tulving.adapters.embedders._pooling import Vectors, check_query, check_texts, empty, first_row
from tulving.domain.errors import ConfigError

if TYPE_CHECKING:
    from tulving.plugins.registry import AdapterContext

VERSION = "v1"
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_EMPTY_FEATURE = "\x00empty"
_WORD, _BIGRAM, _CHAR = 1.0, 0.5, 0.25
_NGRAM = 3


@lru_cache(maxsize=1 << 17)
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    digest = int.from_bytes(
        hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little"
    )
    return digest % dimension, (1.0 if digest >> 63 else -1.0)


def features(text: str) -> list[tuple[str, float]]:
    """The weighted features of ``text`` (exposed for tests and debugging)."""
    words = _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())
    out: list[tuple[str, float]] = [("w:" + w, _WORD) for w in words]
    out.extend(("b:" + a + " " + b, _BIGRAM) for a, b in pairwise(words))
    for word in words:
        padded = f"<{word}>"
        if len(padded) > _NGRAM:
            out.extend(
                ("c:" + padded[i : i + _NGRAM], _CHAR) for i in range(len(padded) - _NGRAM + 1)
            )
    return out or [(_EMPTY_FEATURE, 1.0)]


class HashingEmbedder:
    """Deterministic feature hashing into ``dimension`` buckets; ``model_id`` names it."""

    def __init__(self, dimension: int = 384) -> None:
        if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 8:
            raise ConfigError(f"dimension must be an integer >= 8, got {dimension!r}")
        self.dimension = dimension
        self.model_id = f"hashing-{VERSION}-{dimension}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        out = np.zeros((len(items), self.dimension), dtype=np.float64)
        for row, text in enumerate(items):
            vector = out[row]
            for feature, weight in features(text):
                bucket, sign = _bucket(feature, self.dimension)
                vector[bucket] += sign * weight
            norm = float(np.linalg.norm(vector))
            if norm == 0.0:  # every feature cancelled out: fall back to the reserved one
                bucket, sign = _bucket(_EMPTY_FEATURE, self.dimension)
                vector[bucket], norm = sign, 1.0
            vector /= norm
        return out.astype(np.float32)

    def embed_query(self, text: str) -> Vectors:
        return first_row(self.embed([check_query(text)]))


def create(context: AdapterContext | None = None, **options: Any) -> HashingEmbedder:
    return HashingEmbedder(**options)
