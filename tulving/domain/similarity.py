"""Near-duplicate detection for curation, so copies of one memory do not crowd out others.

Two texts are near-duplicates when their normalised content hashes match or the Jaccard
similarity of their word sets reaches a threshold (0.9 by default). Checking each
candidate against everything already kept would be quadratic; prefix filtering (the
AllPairs algorithm) makes it cheap: with words sorted in one global order, two sets with
Jaccard >= t must share a word among the first ``|A| - ceil(t * |A|) + 1`` words of each.
The filter only prunes; every reported pair is verified exactly, so results do not depend
on the order chosen.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterable

from tulving.domain.entry import content_hash
from tulving.domain.errors import ValidationError

DEFAULT_THRESHOLD = 0.9
_WORD = re.compile(r"\w+")


def word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _order_key(word: str) -> tuple[int, str]:
    # crc32 spreads frequent words (the, a, is) away from the prefix; stable across runs.
    return (zlib.crc32(word.encode("utf-8")), word)


class NearDuplicateIndex:
    """Kept texts, queried with ``find``; ``add`` after deciding to keep one."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValidationError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self._hashes: dict[str, str] = {}
        self._sets: dict[str, frozenset[str]] = {}
        self._prefix_index: dict[str, list[str]] = {}

    def _prefix(self, words: frozenset[str]) -> list[str]:
        size = len(words)
        length = size - math.ceil(self.threshold * size) + 1
        return sorted(words, key=_order_key)[:length]

    def find(self, text: str, text_hash: str | None = None) -> str | None:
        """Id of a kept text that ``text`` nearly duplicates, or None."""
        digest = text_hash or content_hash(text)
        same = self._hashes.get(digest)
        if same is not None:
            return same
        words = word_set(text)
        if not words:
            return None
        seen: set[str] = set()
        for word in self._prefix(words):
            for other_id in self._prefix_index.get(word, ()):
                if other_id in seen:
                    continue
                seen.add(other_id)
                other = self._sets[other_id]
                small, large = sorted((len(words), len(other)))
                if small < self.threshold * large:
                    continue
                if jaccard(words, other) >= self.threshold:
                    return other_id
        return None

    def add(self, item_id: str, text: str, text_hash: str | None = None) -> None:
        self._hashes.setdefault(text_hash or content_hash(text), item_id)
        words = word_set(text)
        if not words or item_id in self._sets:
            return
        self._sets[item_id] = words
        for word in self._prefix(words):
            self._prefix_index.setdefault(word, []).append(item_id)


def near_duplicate_groups(
    items: Iterable[tuple[str, str]], threshold: float = DEFAULT_THRESHOLD
) -> dict[str, str]:
    """Map each later near-duplicate id to the first (best) id it duplicates."""
    index = NearDuplicateIndex(threshold)
    duplicates: dict[str, str] = {}
    for item_id, text in items:
        original = index.find(text)
        if original is None:
            index.add(item_id, text)
        else:
            duplicates[item_id] = original
    return duplicates
