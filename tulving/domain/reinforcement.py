"""Restatements that reinforce: the evidence a memory gathers when it is said again.

A user who says "I love jazz fusion" in five conversations has one preference said five
times, not five preferences. When a new PREFERENCE or FACT restates an active one of the
same type and subject (``restates``), the write keeps the existing row and adds to its
evidence instead (``metadata["evidence"]``: how many times it was said, when last, and
the ids of the turns or entries that said it). A new value for a structured fact is not
a restatement: it supersedes, as before.

``restatement_score`` is a lexical measure (no vectors, so it decides at write time even
when embedding is deferred): the overlap of the two texts' content words, with light
stemming, after dropping the subject's own name. ``RESTATEMENT_THRESHOLD`` was chosen on
the labelled pairs in ``tests/fixtures/restatements/`` (``benchmarks/restatements.py``);
numbers or a negation on one side only are never a restatement (they say another thing).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

import attrs

#: Score at or above which a text restates another (see the module doc for its origin).
RESTATEMENT_THRESHOLD = 0.9
#: A statement with fewer content words than this is too vague to be matched by its words
#: ("user has been doing some research"): it never restates, nor is restated.
MIN_CONTENT_WORDS = 3
#: Source ids kept in an entry's evidence at most (the count goes on beyond it).
MAX_SOURCES = 20
_WORD = re.compile(r"[a-z0-9']+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_NEGATION = re.compile(r"\b(not|no|never|none|nobody|nothing|cannot|don't|doesn't|didn't|"
                       r"isn't|wasn't|won't|can't|hate|hates|dislike|dislikes)\b")
_STOP = frozenset("""a an the and or but of to in on at for with from by as is are was were be
been being am do does did have has had i i'm i've me my mine we our us you your user user's
it its this that these those there here so very really just also too about into than then
s t d ll ve re m not no they them their theirs he him his she her hers lately recently
actually even still pretty quite already now some any lot lots much many more most again
get got getting go going gone""".split())
#: Words that say where a thing stands: one on each side says two different moments.
_STAGES = frozenset("""start started starting began begun begin finish finished finishing
stop stopped quit quitting end ended complete completed""".split())
_NUMBER_WORDS = frozenset("""one two three four five six seven eight nine ten eleven twelve
single couple dozen half hundred thousand first second third""".split())
_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s")


@attrs.frozen
class Evidence:
    """How often a memory was said: ``count`` (1 when said once), when it was said last
    (None when once), and the ids of what said it again (turns or entries, newest last)."""

    count: int = 1
    last_seen: datetime | None = None
    sources: tuple[str, ...] = ()

    def as_metadata(self) -> dict[str, object]:
        return {"count": self.count,
                "last_seen": self.last_seen.isoformat() if self.last_seen else None,
                "sources": list(self.sources)}


def evidence_of(entry: object) -> Evidence:
    """The evidence an entry carries in ``metadata["evidence"]`` (1, never, none if not)."""
    metadata = getattr(entry, "metadata", None)
    raw = metadata.get("evidence") if isinstance(metadata, Mapping) else None
    if not isinstance(raw, Mapping):
        return Evidence()
    count = raw.get("count")
    last = raw.get("last_seen")
    sources = raw.get("sources")
    try:
        seen = datetime.fromisoformat(last) if isinstance(last, str) else None
    except ValueError:
        seen = None
    return Evidence(count if isinstance(count, int) and count >= 1 else 1, seen,
                    tuple(s for s in sources if isinstance(s, str))
                    if isinstance(sources, list) else ())


def reinforced(evidence: Evidence, at: datetime, sources: Sequence[str]) -> Evidence:
    """``evidence`` with one more statement, made at ``at`` by ``sources``."""
    kept = tuple(dict.fromkeys((*evidence.sources, *sources)))[-MAX_SOURCES:]
    last = at if evidence.last_seen is None or at > evidence.last_seen else evidence.last_seen
    return Evidence(evidence.count + 1, last, kept)


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str, names: frozenset[str] = frozenset()) -> frozenset[str]:
    """The stemmed words of ``text`` that carry its content (no stop words, no names)."""
    words = _WORD.findall(text.casefold().replace("\u2019", "'"))
    return frozenset(_stem(w) for w in words if w not in _STOP and w not in names)


def _marks(text: str, words: frozenset[str]) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w in words}


Signals = tuple[frozenset[str], frozenset[str], bool]


def _signals(text: str) -> Signals:
    """What ``says_otherwise`` compares of one text: its numbers, its stage words and
    whether it negates."""
    return (frozenset(set(_NUMBER.findall(text)) | _marks(text, _NUMBER_WORDS)),
            frozenset(_marks(text, _STAGES)), bool(_NEGATION.search(text.casefold())))


class TextReadings:
    """Each text's content words and signals, read once for one batch of writes.

    A batch compares each new statement with up to 200 of its own and with what the store
    proposes, so each text is scored hundreds of times: 180k scores for a batch of 1,000
    facts took 28 s when both texts were read again every time, 1.6 s with this. It lives
    as long as the batch's plan, never longer: a process-wide cache would keep an erased
    memory's words and numbers in memory after ``forget(hard=True)``."""

    def __init__(self) -> None:
        self._words: dict[tuple[str, frozenset[str]], frozenset[str]] = {}
        self._signals: dict[str, Signals] = {}

    def words(self, text: str, names: frozenset[str]) -> frozenset[str]:
        key = (text, names)
        found = self._words.get(key)
        if found is None:
            found = self._words[key] = content_words(text, names)
        return found

    def signals(self, text: str) -> Signals:
        found = self._signals.get(text)
        if found is None:
            found = self._signals[text] = _signals(text)
        return found


def restatement_score(a: str, b: str, names: frozenset[str] = frozenset(),
                      readings: TextReadings | None = None) -> float:
    """How much of the shorter text the longer one says again: the overlap coefficient
    of their content words (1.0: every content word of one is in the other); 0.0 when
    they disagree (``says_otherwise``) or one has fewer than ``MIN_CONTENT_WORDS``.
    (On the tuning pairs, penalising the longer text's extra words lost recall at every
    precision, so the shorter text's coverage alone decides.) ``readings``: a batch's
    memo of the texts it has read."""
    readings = readings if readings is not None else TextReadings()
    if says_otherwise(a, b, readings):
        return 0.0
    wa, wb = readings.words(a, names), readings.words(b, names)
    if min(len(wa), len(wb)) < MIN_CONTENT_WORDS:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def says_otherwise(a: str, b: str, readings: TextReadings | None = None) -> bool:
    """Whether two texts disagree on something a word list can see: numbers (digits or
    words), a negation on one side only, or two stages of a thing (started / finished)."""
    numbers_a, stages_a, negated_a = readings.signals(a) if readings else _signals(a)
    numbers_b, stages_b, negated_b = readings.signals(b) if readings else _signals(b)
    if (numbers_a or numbers_b) and numbers_a != numbers_b:
        return True
    if stages_a and stages_b and not stages_a & stages_b:
        return True
    return negated_a != negated_b


def restates(a: str, b: str, names: frozenset[str] = frozenset(),
             threshold: float = RESTATEMENT_THRESHOLD) -> bool:
    return restatement_score(a, b, names) >= threshold
