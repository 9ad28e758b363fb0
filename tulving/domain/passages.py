"""Passages of long memories: the part of a long text that bears on a query.

A long memory (an assistant's answer of several hundred words, a pasted document) costs a
curated block as much as a dozen short ones, while the sentence that answers the query is
one of many. Showing that part, marked as an excerpt of a memory that stays reachable
whole (``get(id)``), is progressive disclosure applied inside one memory: the budget buys
the evidence, not its surroundings.

A passage here is a run of consecutive sentences (split at sentence ends and line breaks)
of at most ``max_chars`` characters. The best passage is the one whose sentences hold the
most of the query's words (a word counts when it starts with the stem of a query word;
a number only as a whole word), each word weighted by how rare it is in the memory
itself (a word said in every sentence locates nothing) and by what it does in the
question (:class:`PassageChoice`, with :mod:`tulving.domain.question_parts`):

- words the memory's **opening** holds weigh less: a long answer opens by restating
  its topic, and so does a question about it ("going back to our conversation about X");
  those shared words would otherwise pull every excerpt to the opening;
- words only the question's **preamble** holds (the restated topic) weigh less (the
  **focus** words right after its wh-word, "which *headphones*", may weigh more; measured
  and not kept, see ``PassageChoice.focus_weight``);
- an **ordinal** ("the fifth one", "number 8", "day 5", "the last tip") picks that item
  of the memory's lists (:mod:`tulving.domain.list_items`; among several lists, the one
  whose item and lead-in line hold the most of the query's words);
- when **no passage is clearly better** than another (the runner-up, not overlapping,
  scores ``spread`` of the best or more), two passages of half the length are shown
  rather than a guess.

Ties go to the earlier passage, and a text that matches nothing gives its opening, which
is what a truncation would have shown. Pure string work: no model and no index, so it
costs microseconds per memory and runs only for the long memories packing reaches.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Sequence

import attrs

from tulving.domain.errors import ValidationError
from tulving.domain.list_items import ListItem, TextList, items_at, text_lists
from tulving.domain.question_parts import QuestionParts, question_parts

#: A sentence: up to and including its end mark(s) or a line break. An end mark ends a
#: sentence only before a space, a closing quote or bracket, or the end: "0.2 percent",
#: "e.g., ambient" and "Levels.fyi" stay whole.
_SENTENCE = re.compile(r"(?:[^.!?\n]+|[.!?]+(?![\s\"')\]]|$))*(?:[.!?]+[\"')\]]*|\n+|$)")
ELLIPSIS = "…"
Span = tuple[int, int]


@attrs.frozen
class PassageChoice:
    """How a passage is chosen; each field is an ablation row of the long-memory
    benchmarks (``benchmarks/_variants.py``). ``PLAIN`` is the earlier rule
    (every query word alike, no lists, one passage)."""

    opening_weight: float = 0.5
    """Weight of a query word the memory's opening (its first ``opening_chars``) holds."""
    preamble_weight: float = 0.5
    """Weight of a query word that only the question's preamble holds."""
    focus_weight: float = 1.0
    """Weight of a focus word of the question (after its wh-word). Off (1.0): at 2.0 it
    changed no excerpt of the written set or of LongMemEval_S dev (``benchmarks/
    excerpts.py``, row "+ focus words"), so it is not kept; the focus stays a feature of
    :class:`~tulving.domain.question_parts.QuestionParts` for rankers that may use it."""
    lists: bool = True
    """Whether an ordinal in the question picks the item of a list."""
    spread: float = 0.8
    """Show two half-length passages when the runner-up scores at least this share of
    the best (above 1: always one passage)."""
    opening_chars: int = 240

    def __attrs_post_init__(self) -> None:
        for name in ("opening_weight", "preamble_weight", "focus_weight"):
            if not getattr(self, name) > 0:
                raise ValidationError(f"passage choice: {name} must be > 0")


PLAIN = PassageChoice(opening_weight=1.0, preamble_weight=1.0, focus_weight=1.0,
                      lists=False, spread=2.0)
DEFAULT_CHOICE = PassageChoice()


def stem(word: str) -> str:
    """A crude English stem (plural, past and gerund endings off), enough to match a
    query's "recommendations" with a passage's "recommend" when choosing where to look."""
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def sentence_spans(text: str) -> list[Span]:
    """(start, end) of each non-blank sentence of ``text``, in order."""
    spans = []
    for match in _SENTENCE.finditer(text):
        start, end = match.span()
        if end > start and text[start:end].strip():
            spans.append((start, end))
    return spans


def _matcher(stems: Sequence[str]) -> re.Pattern[str] | None:
    """One pattern finding every word that starts with a query term's stem (longest
    first; a number only as a whole number), so a text is scanned once, at the regex
    engine's speed."""
    ordered = sorted(set(stems), key=lambda w: (-len(w), w))
    if not ordered:
        return None
    alternatives = [re.escape(s) + (r"(?![\d])" if s.isdigit() else "") for s in ordered]
    return re.compile(r"(?<![^\W_])(" + "|".join(alternatives) + ")", re.IGNORECASE)


@functools.lru_cache(maxsize=64)
def _stem_weights(question: QuestionParts, choice: PassageChoice
                  ) -> tuple[re.Pattern[str] | None, dict[str, float]]:
    """The matcher of the question's stems and each stem's weight from its role in the
    question (once per question: ``curate()`` excerpts every long memory it reaches with
    the same one)."""
    multiplier: dict[str, float] = {}
    preamble, focus = question.preamble, set(question.focus)
    for term in question.terms:
        key = stem(term.casefold())
        if not key:
            continue
        weight = 1.0
        if term in focus:
            weight *= choice.focus_weight
        if term in preamble:
            weight *= choice.preamble_weight
        multiplier[key] = max(weight, multiplier.get(key, 0.0))
    return _matcher(list(multiplier)), multiplier


class _Scorer:
    """The query's stems found in each sentence of one text, and each stem's weight."""

    def __init__(self, text: str, question: QuestionParts, choice: PassageChoice) -> None:
        self.text = text
        self.spans = sentence_spans(text)
        self.starts = [s for s, _ in self.spans]
        self.matcher, multiplier = _stem_weights(question, choice)
        self.found: list[set[str]] = [set() for _ in self.spans]
        if self.matcher is not None and self.spans:
            for match in self.matcher.finditer(text):
                index = bisect.bisect_right(self.starts, match.start()) - 1
                if index >= 0:
                    self.found[index].add(match.group(1).casefold())
        frequency: dict[str, int] = {}
        for words in self.found:
            for word in words:
                frequency[word] = frequency.get(word, 0) + 1
        opening: set[str] = set()
        if choice.opening_weight != 1.0:
            for (start, _), words in zip(self.spans, self.found, strict=True):
                if start >= choice.opening_chars:
                    break
                opening |= words
        self.weight = {
            w: math.log(1.0 + len(self.spans) / n) * multiplier.get(w.casefold(), 1.0)
            * (choice.opening_weight if w in opening else 1.0)
            for w, n in frequency.items()}

    def score(self, first: int, last: int) -> float:
        """The weight of the distinct stems of sentences ``first`` to ``last - 1``."""
        covered: set[str] = set()
        for words in self.found[first:last]:
            covered |= words
        return sum(self.weight[w] for w in covered)

    def score_range(self, start: int, end: int) -> float:
        """The weight of the stems found in the sentences overlapping [start, end)."""
        first = max(0, bisect.bisect_right(self.starts, start) - 1)
        last = bisect.bisect_left(self.starts, end)
        return self.score(first, last)

    def windows(self, max_chars: int, lo: int = 0, hi: int | None = None
                ) -> list[tuple[float, Span]]:
        """Every run of whole sentences of at most ``max_chars`` characters (within the
        offsets [lo, hi) when given), one starting at each sentence, with its score; a
        single longer sentence is cut at ``max_chars``. One pass: the run's end only moves
        forward, and the score changes only where a stem enters or leaves the run."""
        spans, found, weight = self.spans, self.found, self.weight
        top = len(self.text) if hi is None else hi
        out: list[tuple[float, Span]] = []
        counts: dict[str, int] = {}
        score, last = 0.0, 0  # the run covers sentences [first, last)
        for first, (head, tail) in enumerate(spans):
            if last < first:
                last = first
            start = max(head, lo)
            if tail <= lo or start >= top:
                if last > first:  # drop the sentence from the run
                    score = self._leave(found[first], counts, score)
                continue
            while last < len(spans) and spans[last][0] < top and \
                    min(spans[last][1], top) - start <= max_chars:
                for word in found[last]:
                    counts[word] = counts.get(word, 0) + 1
                    if counts[word] == 1:
                        score += weight[word]
                last += 1
            if last > first:
                # rounded: a sum kept by adding and taking away drifts in the last bits,
                # and equal scores must tie (the earlier passage wins a tie)
                out.append((round(score, 9), (start, min(spans[last - 1][1], top))))
                score = self._leave(found[first], counts, score)
            else:  # one sentence longer than max_chars: cut
                own = sum(weight[w] for w in found[first])
                out.append((own, (start, start + max_chars)))
        return out

    def _leave(self, words: set[str], counts: dict[str, int], score: float) -> float:
        for word in words:
            counts[word] -= 1
            if counts[word] == 0:
                score -= self.weight[word]
        return score


def _best(windows: list[tuple[float, Span]]) -> tuple[float, Span] | None:
    best: tuple[float, Span] | None = None
    for score, span in windows:
        if best is None or score > best[0]:
            best = (score, span)
    return best


def _overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _item_passage(scorer: _Scorer, question: QuestionParts, max_chars: int
                  ) -> Span | None:
    """The item of a list at the question's ordinal (see the module's docstring)."""
    if question.ordinal is None:
        return None
    lists: list[TextList] = text_lists(scorer.text)
    found = items_at(lists, question.ordinal, question.label)
    if not found:
        return None

    def preference(pair: tuple[ListItem, TextList]) -> tuple[float, int, int]:
        item, text_list = pair
        lexical = scorer.score_range(item.start, item.end) + scorer.score_range(*text_list.lead)
        return (lexical, -text_list.indent, len(text_list.items))

    item, _ = max(found, key=preference)  # max keeps the first of equals
    if item.end - item.start <= max_chars:
        return item.start, item.end
    best = _best(scorer.windows(max_chars, item.start, item.end))
    return best[1] if best is not None else (item.start, item.start + max_chars)


def passage_spans(text: str, question: QuestionParts | Sequence[str], max_chars: int,
                  choice: PassageChoice = DEFAULT_CHOICE) -> list[Span]:
    """The passage(s) of ``text`` to show for ``question``, in text order: one of at
    most ``max_chars`` characters, or two of at most half that each when neither is
    clearly better (see the module's docstring)."""
    parts = question if isinstance(question, QuestionParts) else QuestionParts(
        tuple(question), frozenset(question))
    scorer = _Scorer(text, parts, choice)
    if not scorer.spans:
        return [(0, min(len(text), max_chars))]
    if choice.lists:
        item = _item_passage(scorer, parts, max_chars)
        if item is not None:
            return [item]
    windows = scorer.windows(max_chars)
    best = _best(windows)
    if best is None or best[0] <= 0.0:
        start, end = scorer.spans[0]
        return [(start, min(end, start + max_chars))] if end - start > max_chars else [
            windows[0][1]]
    if choice.spread <= 1.0:
        runner_up = _best([w for w in windows if not _overlaps(w[1], best[1])])
        if runner_up is not None and runner_up[0] >= choice.spread * best[0]:
            halves = scorer.windows(max_chars // 2)
            first = _best(halves)
            if first is not None:
                second = _best([w for w in halves if not _overlaps(w[1], first[1])])
                if second is not None and second[0] > 0.0:
                    return sorted([first[1], second[1]])
    return [best[1]]


def best_span(text: str, terms: Sequence[str], max_chars: int) -> Span:
    """The (start, end) of the passage of at most ``max_chars`` characters that holds the
    most of ``terms``, weighted by their rarity among the text's sentences (the plain
    rule: every term alike, one passage)."""
    return passage_spans(text, terms, max_chars, PLAIN)[0]


def excerpt(text: str, question: QuestionParts | Sequence[str] | str, max_chars: int,
            head_words: int = 8, choice: PassageChoice = DEFAULT_CHOICE) -> str:
    """The passage(s) of ``text`` for ``question`` (a question, its
    :func:`~tulving.domain.question_parts.question_parts`, or bare terms; see
    :func:`passage_spans`). When they do not open the text, the text's first
    ``head_words`` words come first (the opening usually says who, when or what the memory
    is, as an index line would), then an ellipsis; an ellipsis also stands between two
    passages and ends the excerpt when text follows."""
    parts = question_parts(question) if isinstance(question, str) else question
    spans = passage_spans(text, parts, max_chars, choice)
    pieces: list[str] = []
    before = text[: spans[0][0]].split()
    if before:
        head = " ".join(before[:head_words])
        pieces.append(f"{head} {ELLIPSIS}" if len(before) > head_words else head)
    for number, (start, end) in enumerate(spans):
        if number and text[spans[number - 1][1]:start].strip():
            pieces.append(ELLIPSIS)
        pieces.append(" ".join(text[start:end].split()))
    if text[spans[-1][1]:].strip():
        pieces.append(ELLIPSIS)
    return " ".join(pieces)
