"""Passage choice before issue 47, kept importable for benchmarks/excerpts.py only: the
module ``tulving/domain/passages.py`` as it stood on main (faf4ddf), copied verbatim but
for this docstring and ``stem`` (imported: unchanged), so the benchmark times both in one
run and checks the plain row."""
# ruff: noqa
# fmt: off

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Sequence

#: A sentence: up to and including its end mark(s) or a line break.
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+[\"')\]]*|\n+|$)")
ELLIPSIS = "…"


from tulving.domain.passages import stem  # unchanged by issue 47


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-blank sentence of ``text``, in order (the old end rule)."""
    return [m.span() for m in _SENTENCE.finditer(text) if m.end() > m.start()
            and text[m.start():m.end()].strip()]


def _matcher(terms: Sequence[str]) -> re.Pattern[str] | None:
    """One pattern finding every word that starts with a query term's stem (longest
    first), so a sentence is scanned once, at the regex engine's speed."""
    stems = sorted({stem(t.casefold()) for t in terms if t}, key=lambda w: (-len(w), w))
    if not stems:
        return None
    return re.compile(r"(?<![^\W_])(" + "|".join(map(re.escape, stems)) + ")",
                      re.IGNORECASE)


def best_span(text: str, terms: Sequence[str], max_chars: int) -> tuple[int, int]:
    """The (start, end) of the passage of at most ``max_chars`` characters (a run of whole
    sentences; a single longer sentence is cut at ``max_chars``) that holds the most of
    ``terms``, weighted by their rarity among the text's sentences."""
    spans = sentence_spans(text)
    if not spans:
        return 0, min(len(text), max_chars)
    matcher = _matcher(terms)
    found: list[set[str]] = [set() for _ in spans]
    if matcher is not None:
        starts = [s for s, _ in spans]
        for match in matcher.finditer(text):
            found[bisect.bisect_right(starts, match.start()) - 1].add(match.group(1).casefold())
    frequency: dict[str, int] = {}
    for words in found:
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
    weight = {w: math.log(1.0 + len(spans) / n) for w, n in frequency.items()}
    best, best_score = (spans[0][0], min(spans[0][1], spans[0][0] + max_chars)), 0.0
    for first in range(len(spans)):
        start = spans[first][0]
        covered: set[str] = set()
        last = first
        while last < len(spans) and spans[last][1] - start <= max_chars:
            covered |= found[last]
            last += 1
        score = sum(weight[w] for w in covered)
        if score > best_score:
            end = spans[last - 1][1] if last > first else start + max_chars
            best, best_score = (start, end), score
    return best


def excerpt(text: str, terms: Sequence[str], max_chars: int, head_words: int = 8) -> str:
    """The best passage of ``text`` for ``terms`` (see :func:`best_span`). When it does not
    open the text, the text's first ``head_words`` words come first (the opening usually
    says who, when or what the memory is, as an index line would), then an ellipsis; an
    ellipsis also ends it when text follows."""
    start, end = best_span(text, terms, max_chars)
    body = " ".join(text[start:end].split())
    before = text[:start].split()
    if before:
        head = " ".join(before[:head_words])
        body = f"{head} {ELLIPSIS} {body}" if len(before) > head_words else f"{head} {body}"
    tail = f" {ELLIPSIS}" if text[end:].strip() else ""
    return body + tail
