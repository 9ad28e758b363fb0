"""Packing ranked memories into a prompt block that never exceeds a token budget.

Guarantee: ``Packed.token_count == tokenizer.count(Packed.content) <= budget``, whatever
the candidates and the budget. The final string is always re-counted as a whole, because
BPE tokenizers can merge across the boundaries of separately counted pieces.

Layout (progressive disclosure)::

    ## Memory (5 of 40)
    - [decision · key=auth/strategy · 2026-03-01] Use OAuth device flow for the CLI ...
    - [fact · 2025-11-02 · stale] The staging database is ...
    [08 May 2023] Caroline: a raw episode that states its own date needs no label
    ### Index
    - [plan · key=release/1.2 · 2026-02-20] Cut the release branch after the audit …
    (35 not shown: 2 near-duplicates, 33 over budget; search for more)

Full text greedily in rank order (a memory that does not fit is skipped, smaller lesser ones
still go in), then one-line index entries for the skipped ones in what is left, then the
line stating what was left out. An oversize best memory is
truncated with `` …[truncated]`` rather than dropped. Near-duplicates of something already
shown are skipped. When even the header does not fit beside the best memory, the block is
that memory's line alone (possibly empty); with ``headed=True`` (the briefing's sections,
whose heading says what a line is) it is the header with that memory cut to fit, or
nothing: a line is never shown without its heading.

Speed: pieces are counted once each and summed; the joined string is counted once at the
end and, in the rare case boundary merges push it over, the lowest-ranked lines are
dropped until it fits.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol

import attrs

from tulving.domain.entry import MemoryEntry, content_hash
from tulving.domain.errors import ValidationError
from tulving.domain.ranking import Ranked
from tulving.domain.similarity import DEFAULT_THRESHOLD, NearDuplicateIndex, word_set
from tulving.domain.types import MemoryType

TRUNCATION_MARKER = " …[truncated]"
#: Ends an excerpt line; ``{id}`` is the memory's id, so the whole text stays one
#: ``get(id)`` away (progressive disclosure inside a memory).
EXCERPT_MARKER = " [excerpt of {id}]"
#: A memory is shown as an excerpt when its full line would cost more than this share of
#: the room (and more than ``EXCERPT_MIN_OVER`` tokens), if an excerpt function is given.
DEFAULT_EXCERPT_SHARE = 0.125
EXCERPT_MIN_OVER = 128
INDEX_HEADING = "### Index"
#: Tokens of a memory's own text a headed block must have room for beside its label.
HEADED_MIN_WORDS = 8
DEFAULT_HEADER = "## Memory"
DEFAULT_STALE_AFTER = timedelta(days=90)
DEFAULT_INDEX_WORDS = 8
#: Share of the room full entries may take when the rest cannot all be shown in full.
DEFAULT_FULL_SHARE = 1.0
_INDEX_WORD_CHARS = 24
# In index mode, give up after this many consecutive lines that do not fit: later lines
# are no shorter on average, and trying all of 100k candidates would cost time for nothing.
_MAX_INDEX_MISSES = 16
# In the full-text pass, stop trying after this many consecutive memories that do not fit.
_MAX_FULL_MISSES = 32
# Tokens the full-text pass leaves for index lines (at most an eighth of the room).
_INDEX_RESERVE = 80


class TokenCounter(Protocol):
    """What packing needs from a tokenizer (the Tokenizer port satisfies it).

    A tokenizer may also declare ``splits_at_spaces = True``: every run of characters
    between ASCII spaces that is not all whitespace costs at least one token of its own
    (true of BPE encodings whose pre-tokenizer lets a piece of visible characters start
    with one space but never hold another, as cl100k_base and o200k_base).
    Packing then knows a line cannot fit without counting it.
    """

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


class Disclosure(enum.Enum):
    FULL = "full"
    INDEX = "index"
    TRUNCATED = "truncated"
    EXCERPT = "excerpt"
    """The part of a long memory that bears on the query, marked with the memory's id."""


@attrs.frozen
class Inclusion:
    entry_id: str
    score: float
    disclosure: Disclosure
    #: The line as rendered (without the leading newline).
    line: str


@attrs.frozen
class Packed:
    content: str
    token_count: int
    budget: int
    #: Shown entries, in rendering order (full and truncated first, then index lines).
    included: tuple[Inclusion, ...]
    #: Candidates not shown at all (near-duplicates included).
    omitted: int
    #: Ids skipped as near-duplicates of a shown entry.
    duplicate_ids: tuple[str, ...]
    candidates: int

    @property
    def included_ids(self) -> tuple[str, ...]:
        return tuple(item.entry_id for item in self.included)


def _is_stale(entry: MemoryEntry, now: datetime | None, stale_after: timedelta) -> bool:
    """Not accessed for ``stale_after``; never for entries that do not decay."""
    if now is None or entry.pinned or not entry.type.decays:
        return False
    return now - entry.last_accessed_at >= stale_after


#: Raw experience needs no label; the other types say what kind of knowledge a line is.
_UNLABELLED = frozenset({MemoryType.EPISODE, MemoryType.OBSERVATION})
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")


#: Whitespace other than the ASCII space (a line without any splits like ``str.split()``).
_OTHER_SPACE = re.compile(r"[^\S ]")


def _words(line: str) -> int:
    """Runs between ASCII spaces that are not all whitespace (see ``TokenCounter``)."""
    if _OTHER_SPACE.search(line) is None:
        return len(line.split())
    return sum(1 for word in line.split(" ") if word and not word.isspace())


def _states_its_date(entry: MemoryEntry) -> bool:
    """Whether the text already opens with its event date (imported logs and transcripts
    usually do): repeating it would spend budget on nothing."""
    head = entry.content[:48].casefold()
    when = entry.valid_from
    if str(when.year) not in head:
        return False
    month = _MONTHS[when.month - 1]
    return month[:3] in head or f"-{when.month:02d}-" in head or f"/{when.month:02d}/" in head


def _prefix(entry: MemoryEntry, stale: bool, typed: bool = True) -> str:
    """``- [decision · key=auth/strategy · 2026-03-01 · stale] `` with only what informs:
    every token of a label is a token the budget cannot spend on memories (``typed=False``:
    a block whose heading says what its memories are leaves the type out)."""
    parts = []
    if typed and entry.type not in _UNLABELLED:
        parts.append(entry.type.value.lower())
    if entry.key:
        parts.append(f"key={entry.key}")
    if not _states_its_date(entry):
        parts.append(entry.valid_from.date().isoformat())
    if stale:
        parts.append("stale")
    if entry.conflict_ids:
        parts.append("disputed")  # a conflict nobody could settle: flagged, not hidden
    if parts:
        return f"- [{' · '.join(parts)}] "
    # One line per memory already separates them; a bullet would cost a token each.
    return "- " if "\n" in entry.content.strip() else ""


def render_full_line(
    entry: MemoryEntry,
    now: datetime | None = None,
    *,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
    typed: bool = True,
) -> str:
    return _prefix(entry, _is_stale(entry, now, stale_after), typed) + entry.content.strip()


def _snippet(content: str, words: int) -> str:
    parts = content.split()
    shortened = False
    if len(parts) > words:
        parts, shortened = parts[:words], True
    clipped = []
    for part in parts:
        if len(part) > _INDEX_WORD_CHARS:
            part, shortened = part[:_INDEX_WORD_CHARS], True
        clipped.append(part)
    return " ".join(clipped) + (" …" if shortened else "")


def render_index_line(
    entry: MemoryEntry,
    now: datetime | None = None,
    *,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
    index_words: int = DEFAULT_INDEX_WORDS,
) -> str:
    """One line: type, key, date and the first ``index_words`` words (each clipped)."""
    stale = _is_stale(entry, now, stale_after)
    return _prefix(entry, stale) + _snippet(entry.content, index_words)


def _header(header: str, shown: int, total: int) -> str:
    return f"{header} ({shown} of {total})"


def full_cost(lines: Sequence[str], header: str, tokenizer: TokenCounter) -> int:
    """The smallest budget in which ``pack`` shows these rendered lines all in full under
    ``header`` (the header and the omission line are reserved at their widest)."""
    total = len(lines)
    if total == 0:
        return 0
    reserved = tokenizer.count(_header(header, total, total)) + tokenizer.count(
        "\n" + _footer(total, total))
    return reserved + sum(tokenizer.count("\n" + line) for line in lines)


def _footer(omitted: int, duplicates: int) -> str:
    if duplicates:
        reason = f"{duplicates} near-duplicates, {omitted - duplicates} over budget"
    else:
        reason = "over budget"
    return f"({omitted} not shown: {reason}; search for more)"


@attrs.define
class _Layout:
    header: str
    show_header: bool
    full: list[Inclusion] = attrs.Factory(list)
    index: list[Inclusion] = attrs.Factory(list)
    duplicate_ids: list[str] = attrs.Factory(list)

    def items(self) -> list[Inclusion]:
        return self.full + self.index

    def drop_last(self) -> None:
        if self.index:
            self.index.pop()
        elif self.full:
            self.full.pop()

    def render(self, total: int) -> str:
        shown = len(self.full) + len(self.index)
        if shown == 0:
            return ""
        lines = [item.line for item in self.full]
        if self.index:
            if self.show_header:
                lines.append(INDEX_HEADING)
            lines.extend(item.line for item in self.index)
        if not self.show_header:
            return "\n".join(lines)
        omitted = total - shown
        parts = [_header(self.header, shown, total), *lines]
        if omitted:
            parts.append(_footer(omitted, len(self.duplicate_ids)))
        return "\n".join(parts)


def _check_budget(budget: object) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise ValidationError(f"token budget must be an int, got {budget!r}")
    if budget < 0:
        raise ValidationError(f"token budget must be >= 0, got {budget}")
    return budget


def _truncated_line(prefix: str, content: str, room: int, tokenizer: TokenCounter) -> str | None:
    """``prefix + content[:k] + marker`` within ``room`` tokens (counted alone), or None."""
    fixed = tokenizer.count(prefix) + tokenizer.count(TRUNCATION_MARKER)
    if room - fixed <= 0:
        return None
    text = tokenizer.truncate(content.strip(), room - fixed).rstrip()
    while text:
        line = prefix + text + TRUNCATION_MARKER
        excess = tokenizer.count(line) - room
        if excess <= 0:
            return line
        text = tokenizer.truncate(text, max(0, tokenizer.count(text) - excess)).rstrip()
    return None


def pack(
    ranked: Sequence[Ranked],
    *,
    budget: int,
    tokenizer: TokenCounter,
    header: str = DEFAULT_HEADER,
    now: datetime | None = None,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
    index_words: int = DEFAULT_INDEX_WORDS,
    duplicate_threshold: float = DEFAULT_THRESHOLD,
    full_share: float = DEFAULT_FULL_SHARE,
    clean: Callable[[MemoryEntry], str] | None = None,
    excerpt: Callable[[str], str] | None = None,
    excerpt_share: float = DEFAULT_EXCERPT_SHARE,
    headed: bool = False,
    typed: bool = True,
) -> Packed:
    """Render ``ranked`` (best first) into at most ``budget`` tokens of ``tokenizer``.

    ``clean`` rewrites a memory's text before it is measured and rendered (curation
    passes redaction): it runs only for the memories packing actually looks at, which for
    a large candidate pool is a small share of them.

    ``now`` enables the ``(stale)`` marker for entries not accessed for ``stale_after``.
    When not everything fits in full, full entries after the first (and a truncated first)
    stop at ``full_share`` of the room, so the index can name what else exists.
    ``excerpt`` (text -> the part of it to show, e.g. the passage that matches the query,
    :func:`tulving.domain.passages.excerpt`) enables excerpts: a memory whose full line
    would cost more than ``excerpt_share`` of the room (and more than
    ``EXCERPT_MIN_OVER`` tokens) is shown as its excerpt, marked with its id, instead of
    spending the budget on the whole text or truncating the text's opening.
    ``headed`` never shows a line without ``header`` (see the module doc); ``typed=False``
    leaves the type out of the labels (the header says it).
    Deterministic: the same input gives the same output.
    """
    budget = _check_budget(budget)
    if not 0.0 < excerpt_share <= 1.0:
        raise ValidationError(f"excerpt_share must be in (0, 1], got {excerpt_share}")
    if index_words < 1:
        raise ValidationError(f"index_words must be >= 1, got {index_words}")
    if not 0.0 < full_share <= 1.0:
        raise ValidationError(f"full_share must be in (0, 1], got {full_share}")
    total = len(ranked)
    if budget == 0 or total == 0:
        return Packed("", 0, budget, (), total, (), total)

    counter = _MemoCounter(tokenizer)
    lines = _Lines(counter, now, stale_after, index_words, clean, excerpt)
    lines.excerpt_share = excerpt_share
    lines.typed = typed
    options = (header, duplicate_threshold)
    layout = _layout_with_header(ranked, budget, lines, 1.0, *options)
    if len(layout.items()) + len(layout.duplicate_ids) < total and (
        full_share < 1.0 or not layout.index
    ):
        # Not everything fits in full. Full text is what an agent can use, so the
        # full-first layout wins unless it left no room for a single index line: then a
        # small slice is set aside for the index, if that costs no full memory.
        # (A caller's full_share < 1 asks for the index share explicitly.) When the
        # full-first layout has index lines already, nothing can replace it: no second pass.
        shared = _layout_with_header(
            ranked, budget, lines, full_share, *options, reserve_index=True
        )
        if full_share < 1.0:
            if len(shared.items()) > len(layout.items()):
                layout = shared
        elif not layout.index and shared.index and len(shared.full) >= len(layout.full):
            layout = shared
    content = layout.render(total)
    used = tokenizer.count(content)
    while used > budget and layout.items():
        layout.drop_last()
        content = layout.render(total)
        used = tokenizer.count(content)
    if ranked[0].entry.id not in {item.entry_id for item in layout.items()}:
        # The best memory must not lose its place to the header or to lesser memories:
        # show it alone, without a header, in the richest form that fits.
        alone = (_layout_best_headed(ranked[0], budget, tokenizer, header, lines, total)
                 if headed else _layout_best_alone(ranked[0], budget, tokenizer, header, lines))
        alone_content = alone.render(total)
        alone_used = tokenizer.count(alone_content)
        if alone.items() and alone_used <= budget:
            layout, content, used = alone, alone_content, alone_used
        elif headed and not layout.items():
            content, used = "", 0
    included = tuple(layout.items())
    return Packed(
        content=content,
        token_count=used,
        budget=budget,
        included=included,
        omitted=total - len(included),
        duplicate_ids=tuple(layout.duplicate_ids),
        candidates=total,
    )


class _MemoCounter:
    """Counts each distinct piece once across the two layout passes."""

    def __init__(self, tokenizer: TokenCounter) -> None:
        self.tokenizer = tokenizer
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        cached = self._counts.get(text)
        if cached is None:
            cached = self._counts[text] = self.tokenizer.count(text)
        return cached

    def truncate(self, text: str, max_tokens: int) -> str:
        return self.tokenizer.truncate(text, max_tokens)


class _Lines:
    """Each candidate's text, lines and their token costs, worked out once per ``pack``
    and only for the candidates a layout pass actually reaches."""

    def __init__(
        self,
        counter: _MemoCounter,
        now: datetime | None,
        stale_after: timedelta,
        index_words: int,
        clean: Callable[[MemoryEntry], str] | None,
        excerpt: Callable[[str], str] | None = None,
    ) -> None:
        self.counter = counter
        self.excerpt = excerpt
        self.now, self.stale_after, self.index_words = now, stale_after, index_words
        self._clean = clean
        self.excerpt_share = DEFAULT_EXCERPT_SHARE
        self.typed = True
        self.splits_at_spaces = getattr(counter.tokenizer, "splits_at_spaces", False) is True
        self._texts: dict[str, str] = {}
        self._prefixes: dict[str, str] = {}
        self._words: dict[str, frozenset[str]] = {}
        self._digests: dict[str, str] = {}
        self._shown: dict[str, tuple[str, Disclosure]] = {}

    def text(self, entry: MemoryEntry) -> str:
        text = self._texts.get(entry.id)
        if text is None:
            text = entry.content if self._clean is None else self._clean(entry)
            self._texts[entry.id] = text
        return text

    def prefix(self, entry: MemoryEntry) -> str:
        prefix = self._prefixes.get(entry.id)
        if prefix is None:
            prefix = _prefix(entry, _is_stale(entry, self.now, self.stale_after), self.typed)
            self._prefixes[entry.id] = prefix
        return prefix

    def full_line(self, entry: MemoryEntry) -> str:
        return self.prefix(entry) + self.text(entry).strip()

    def index_line(self, entry: MemoryEntry) -> str:
        return self.prefix(entry) + _snippet(self.text(entry), self.index_words)

    def shown_line(self, entry: MemoryEntry, over: int) -> tuple[str, Disclosure]:
        """The full line, or, for a memory whose full line costs more than ``over``
        tokens, its excerpt line when there is an excerpt function and the excerpt is
        shorter."""
        line = self.full_line(entry)
        if self.excerpt is None or len(line) <= over:  # a token holds at least a character
            return line, Disclosure.FULL
        known = self._shown.get(entry.id)
        if known is not None:
            return known
        # Prose runs 3-5 characters a token: a line over 8 characters a token of the
        # threshold is long without counting it (tokenizing long texts is the cost here).
        if len(line) <= 8 * over and self.counter.count("\n" + line) <= over:
            return line, Disclosure.FULL
        shown = self.prefix(entry) + self.excerpt(self.text(entry).strip()) + \
            EXCERPT_MARKER.format(id=entry.id)
        # an excerpt must save at least half the line
        chosen = (line, Disclosure.FULL) if 2 * len(shown) > len(line) else (
            shown, Disclosure.EXCERPT)
        self._shown[entry.id] = chosen
        return chosen

    def cost(self, line: str, room: int) -> int | None:
        """Tokens of ``line`` on a line of its own, or None when it needs more than
        ``room``. Most lines a pass tries after the room is nearly used do not fit; with
        a tokenizer that splits at spaces, their words show that without counting them
        (measured: 40 of the 100 lines a 2,000-token curate measured)."""
        if self.splits_at_spaces and 2 * room < len(line) + 1 and room < _words(line):
            return None  # (with 2 * room >= len(line) + 1, words <= room: not counted)
        cost = self.counter.count("\n" + line)
        return cost if cost <= room else None

    def duplicate_of(self, entry: MemoryEntry, kept: NearDuplicateIndex) -> str | None:
        return kept.find(self.text(entry), self.digest(entry), self.words(entry))

    def keep(self, entry: MemoryEntry, kept: NearDuplicateIndex) -> None:
        kept.add(entry.id, self.text(entry), self.digest(entry), self.words(entry))

    def digest(self, entry: MemoryEntry) -> str:
        digest = self._digests.get(entry.id)
        if digest is None:
            digest = self._digests[entry.id] = content_hash(self.text(entry))
        return digest

    def words(self, entry: MemoryEntry) -> frozenset[str]:
        found = self._words.get(entry.id)
        if found is None:
            found = self._words[entry.id] = word_set(self.text(entry))
        return found


def _layout_with_header(
    ranked: Sequence[Ranked],
    budget: int,
    lines: _Lines,
    full_share: float,
    header: str,
    duplicate_threshold: float,
    reserve_index: bool = False,
) -> _Layout:
    total = len(ranked)
    counter = lines.counter
    layout = _Layout(header, True)
    # Reserve the header and footer at their widest (every count at the largest value).
    reserved = counter.count(_header(header, total, total)) + counter.count(
        "\n" + _footer(total, total)
    )
    room = budget - reserved
    if room <= 0:
        return layout
    # Full text may use the room but a small slice, so that when memories are left over
    # the index can still name a few of them (progressive disclosure).
    if full_share < 1.0:
        full_room = int(room * full_share)
    else:
        full_room = room - (min(room // 8, _INDEX_RESERVE) if reserve_index else 0)
    kept = NearDuplicateIndex(duplicate_threshold)
    used = 0
    # Pass 1, full text: greedy in rank order; a memory that does not fit is skipped (not
    # the end of the pass), so smaller lesser memories still use the space. Only a memory
    # that fits is checked against what is shown: a near-duplicate that would not fit
    # anyway costs nothing to leave out.
    skipped: list[Ranked] = []
    full_misses = 0
    over = max(EXCERPT_MIN_OVER, int(room * lines.excerpt_share))
    for item in ranked:
        entry = item.entry
        if full_misses < _MAX_FULL_MISSES and full_room - used > 0:
            line, disclosure = lines.shown_line(entry, over)
            limit = room if not layout.full else full_room
            cost = lines.cost(line, limit - used)
            if cost is not None:
                if lines.duplicate_of(entry, kept) is not None:
                    layout.duplicate_ids.append(entry.id)
                    continue
                layout.full.append(Inclusion(entry.id, item.score, disclosure, line))
                lines.keep(entry, kept)
                used += cost
                full_misses = 0
                continue
            if not layout.full and not skipped:
                # The best memory is bigger than the room: cut it, never drop it.
                truncated = _truncated_line(
                    lines.prefix(entry), lines.text(entry), full_room - 1, counter
                )
                if truncated is not None:
                    layout.full.append(
                        Inclusion(entry.id, item.score, Disclosure.TRUNCATED, truncated)
                    )
                    lines.keep(entry, kept)
                    used += counter.count("\n" + truncated)
                    continue
            full_misses += 1
        skipped.append(item)
    # Pass 2, progressive disclosure: one-line index entries for what did not fit in full.
    misses = 0
    heading_cost = counter.count("\n" + INDEX_HEADING)
    for item in skipped:
        entry = item.entry
        line = lines.index_line(entry)
        heading = 0 if layout.index else heading_cost
        cost = lines.cost(line, room - used - heading)
        if cost is not None:
            cost += heading
            if lines.duplicate_of(entry, kept) is not None:
                layout.duplicate_ids.append(entry.id)
                continue
            layout.index.append(Inclusion(entry.id, item.score, Disclosure.INDEX, line))
            lines.keep(entry, kept)
            used += cost
            misses = 0
        else:
            misses += 1
            if misses >= _MAX_INDEX_MISSES or room - used <= 0:
                break
    return layout


def _layout_best_alone(
    best: Ranked, budget: int, tokenizer: TokenCounter, header: str, lines: _Lines
) -> _Layout:
    """No room for a header: the best memory's line alone, in the richest form that fits."""
    entry = best.entry
    layout = _Layout(header, False)
    prefix = lines.prefix(entry)
    text = lines.text(entry)
    full = prefix + text.strip()
    index = prefix + _snippet(text, lines.index_words)
    if tokenizer.count(full) <= budget:
        layout.full.append(Inclusion(entry.id, best.score, Disclosure.FULL, full))
        return layout
    truncated = _truncated_line(prefix, text, budget, tokenizer)
    if truncated is not None and len(truncated) > len(index):
        layout.full.append(Inclusion(entry.id, best.score, Disclosure.TRUNCATED, truncated))
    elif tokenizer.count(index) <= budget:
        layout.index.append(Inclusion(entry.id, best.score, Disclosure.INDEX, index))
    elif truncated is not None:
        layout.full.append(Inclusion(entry.id, best.score, Disclosure.TRUNCATED, truncated))
    return layout


def _layout_best_headed(
    best: Ranked, budget: int, tokenizer: TokenCounter, header: str, lines: _Lines, total: int
) -> _Layout:
    """The header, the best memory cut to what is left, and the omission line; empty
    when even the header and a few words of it do not fit."""
    entry = best.entry
    layout = _Layout(header, True)
    reserved = tokenizer.count(_header(header, 1, total)) + 1
    if total > 1:
        reserved += tokenizer.count("\n" + _footer(total - 1, 0))
    room = budget - reserved
    if room <= 0:
        return layout
    prefix = lines.prefix(entry)
    text = lines.text(entry)
    full = prefix + text.strip()
    if tokenizer.count(full) <= room:
        layout.full.append(Inclusion(entry.id, best.score, Disclosure.FULL, full))
        return layout
    if room < tokenizer.count(prefix + TRUNCATION_MARKER) + HEADED_MIN_WORDS:
        return layout  # a heading over a label and a marker says nothing
    truncated = _truncated_line(prefix, text, room, tokenizer)
    if truncated is not None:
        layout.full.append(Inclusion(entry.id, best.score, Disclosure.TRUNCATED, truncated))
    return layout
