"""Near-duplicate detection for curation, so copies of one memory do not crowd out others.

Two texts are near-duplicates when their normalised content hashes match or the Jaccard
similarity of their word sets reaches a threshold (0.9 by default). Checking each
candidate against everything already kept would be quadratic; prefix filtering (the
AllPairs algorithm) makes it cheap: with words sorted in one global order, two sets with
Jaccard >= t must share a word among the first ``|A| - ceil(t * |A|) + 1`` words of each,
so only texts sharing one of those few words are compared.
The filter only prunes; every reported pair is verified exactly, so results do not depend
on the order chosen.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable

from tulving.domain.entry import content_hash
from tulving.domain.errors import ValidationError

DEFAULT_THRESHOLD = 0.9
#: Kept texts compared per lookup at most. Only thousands of texts over a tiny vocabulary
#: reach it; then a near-duplicate may go unnoticed (exact duplicates never do: they are
#: matched by hash first), and the cost stays linear.
MAX_COMPARISONS = 64
_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=8192)
def _prefix(words: frozenset[str], threshold: float) -> tuple[str, ...]:
    """The first words of ``words`` in the global order, as many as a set needs to share
    with another for Jaccard >= ``threshold``. Memoised: packing asks for the same texts'
    prefixes in each layout pass and curate after curate (a frozenset keeps its hash)."""
    size = len(words)
    length = size - math.ceil(threshold * size) + 1
    # The global order: longest first, then alphabetical. Long words are rare, so
    # prefixes of different texts seldom collide (frequent words such as "the", "is"
    # are short and stay out). Two C-level sorts (alphabetical, then stably by length)
    # are several times faster than one sort with a Python key function.
    return tuple(sorted(sorted(words), key=len, reverse=True)[:length])


def word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


class NearDuplicateIndex:
    """Kept texts, queried with ``find``; ``add`` after deciding to keep one."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValidationError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self._hashes: dict[str, str] = {}
        self._sets: dict[str, frozenset[str]] = {}
        self._prefix_index: dict[str, list[str]] = {}

    def _prefix(self, words: frozenset[str]) -> tuple[str, ...]:
        return _prefix(words, self.threshold)

    def find(
        self, text: str, text_hash: str | None = None, words: frozenset[str] | None = None
    ) -> str | None:
        """Id of a kept text that ``text`` nearly duplicates, or None. ``text_hash`` and
        ``words`` (its ``word_set``) may be given when the caller already has them."""
        digest = text_hash or content_hash(text)
        same = self._hashes.get(digest)
        if same is not None:
            return same
        if words is None:
            words = word_set(text)
        if not words:
            return None
        seen: set[str] = set()
        size = len(words)
        for word in self._prefix(words):
            for other_id in self._prefix_index.get(word, ()):
                if other_id in seen:
                    continue
                seen.add(other_id)
                if len(seen) > MAX_COMPARISONS:
                    return None
                other = self._sets[other_id]
                if min(size, len(other)) < self.threshold * max(size, len(other)):
                    continue
                if jaccard(words, other) >= self.threshold:
                    return other_id
        return None

    def add(
        self,
        item_id: str,
        text: str,
        text_hash: str | None = None,
        words: frozenset[str] | None = None,
    ) -> None:
        self._hashes.setdefault(text_hash or content_hash(text), item_id)
        if words is None:
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
