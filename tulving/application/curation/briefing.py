"""The orient briefing: who the agent works for and what matters, within a token budget.

``curate(mode="orient")`` (no query) briefs an agent that starts or resumes work. The
sections, in the order shown (``SECTIONS``):

========== ================================== ============================================
section    heading                            what
========== ================================== ============================================
profile    ``## About the user``              the user's profile: what
                                              ``profile()`` reads, about the user only
pinned     ``## Pinned``                      what someone pinned, whatever its type
decisions  ``## Decisions in force``          DECISIONs not yet past their validity
plans      ``## Active plans``                PLANs not yet past their validity
procedures ``## Procedures that worked``      PROCEDUREs, by outcomes (untried ones after
                                              those that worked; failing ones left out)
facts      ``## Facts``                       preferences and facts about anything else
summaries  ``## Recent sessions``             the last sessions' summaries, newest first
recent     ``## Recent turns``                raw turns and observations, newest first,
                                              only in what the others leave
keys       ``## Keys``                        keys of memories not shown above
========== ================================== ============================================

A memory is in one section only (the first in the order ``profile``, ``pinned``,
``decisions``, ``plans``, ``procedures``, ``summaries``, ``facts``, ``recent`` that takes
it), and a text is shown once: a candidate whose text nearly duplicates one shown in a
section packed before it is left out, and a summary's lines that repeat what another
section shows are dropped from it (``tulving.domain.similarity``, Jaccard 0.9 of words).
Every section is printed with its heading (``pack(headed=True)``): a section with room
for less than its heading and the start of its best memory shows nothing.

Shares (``tulving.domain.shares.allocate``): each section that has something to show gets a
share of the budget by its weight, capped at what showing all of it in full costs; what a
capped section does not use goes to the others, so an empty section holds nothing and a
store of preferences and small talk spends the budget on the preferences first. Raw turns
have no weight: a framework replays the conversation itself, so they get only what is
left (and whatever a section's packing did not use).

Why the profile leads and turns come last: the issue that asked for this briefing measured
the old one (pinned, decisions, plans, recent observations and keys) on a user with two
preferences and twelve turns of small talk: at 300 tokens it showed eleven lines of small
talk and the preferences only as key names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs

from tulving.application.curation.once import not_shown_again, remember_shown
from tulving.application.curation.shown import (
    curatable,
    key_shown,
    redacted,
    shown_key_text,
    shown_text,
)
from tulving.application.plumbing.context import MemoryContext
from tulving.application.retrieval.profile_reads import profile_entries
from tulving.domain.curated import CandidateReport, CuratedContext, CuratedEntry
from tulving.domain.curation_report import explain as explain_packing
from tulving.domain.effectiveness import effectiveness
from tulving.domain.entry import MemoryEntry
from tulving.domain.packing import full_cost, pack, render_full_line
from tulving.domain.query import EntryFilter
from tulving.domain.ranking import Candidate, Ranked, RankingWeights, rank, spread_events
from tulving.domain.shares import allocate
from tulving.domain.similarity import NearDuplicateIndex
from tulving.domain.types import MemoryType


@attrs.frozen
class Section:
    name: str
    heading: str
    #: Relative share of the budget among the sections that have something to show.
    weight: float


#: The briefing's sections in the order they are shown.
SECTIONS: tuple[Section, ...] = (
    Section("profile", "## About the user", 0.55),
    Section("pinned", "## Pinned", 0.15),
    Section("decisions", "## Decisions in force", 0.15),
    Section("plans", "## Active plans", 0.08),
    Section("procedures", "## Procedures that worked", 0.08),
    Section("facts", "## Facts", 0.06),
    Section("summaries", "## Recent sessions", 0.09),
    Section("recent", "## Recent turns", 0.0),
    Section("keys", "## Keys", 0.05),
)
#: Which section takes a memory that more than one would show (see the module doc).
CLAIM_ORDER = ("profile", "pinned", "decisions", "plans", "procedures", "summaries", "facts",
               "recent")
#: Most candidates a section reads from the store (newest first).
SECTION_LIMIT = {"facts": 2000, "recent": 200, "summaries": 20}
DEFAULT_LIMIT = 500
#: Summaries of this many last sessions are candidates.
LAST_SESSIONS = 5
#: Each profile memory's score is multiplied by this for every better one said at the same
#: event time (the same conversation): the budget spreads over what was said across
#: conversations (``tulving.domain.ranking.spread_events``).
PROFILE_SESSION_DECAY = 0.5
#: Procedures whose Laplace-smoothed success rate is below this failed more than they
#: worked: not "procedures that worked".
MIN_EFFECTIVENESS = 0.5
SEPARATOR = "\n\n"
#: Sections whose heading says what their memories are: their labels leave the type out
#: (four tokens a line that the profile spends on one more thing about the user).
UNTYPED = frozenset({"profile", "decisions", "plans", "procedures", "summaries"})
_TYPES = {
    "facts": (MemoryType.PREFERENCE, MemoryType.FACT),
    "decisions": (MemoryType.DECISION,),
    "plans": (MemoryType.PLAN,),
    "procedures": (MemoryType.PROCEDURE,),
    "summaries": (MemoryType.SUMMARY,),
    "recent": (MemoryType.EPISODE, MemoryType.OBSERVATION),
}


class Briefing:
    """Builds one orient briefing (see the module doc)."""

    def __init__(self, ctx: MemoryContext, tokenizer: Any) -> None:
        self.ctx = ctx
        self.tokenizer = tokenizer

    def build(self, budget: int, flt: EntryFilter, weights: RankingWeights,
              explain: bool) -> CuratedContext:
        now = self.ctx.clock.now()
        ranked = self._ranked(flt, now, weights)
        keyed = [e for e in self.ctx.storage.query(flt, limit=2000) if e.key and curatable(e)]
        keyed.sort(key=lambda e: e.key or "")
        demands = {s.name: self._demand(s, ranked.get(s.name, []), budget, now)
                   for s in SECTIONS if s.name != "keys"}
        demands["keys"] = self._keys_demand(keyed, budget)
        present = [s for s in SECTIONS if demands[s.name] > 0]
        separators = self.tokenizer.count(SEPARATOR) * max(0, len(present) - 1)
        shares = allocate(max(0, budget - separators), demands,
                          {s.name: s.weight for s in SECTIONS})
        texts: dict[str, str] = {}
        shown: dict[str, list[CuratedEntry]] = {}
        report: list[CandidateReport] = []
        omitted = 0
        carry = 0
        seen: set[str] = set()
        texts_shown = NearDuplicateIndex()
        # Packed in this order (what a section leaves flows on), shown in SECTIONS order:
        # turns get what every other section, the key index included, did not use.
        for section in [s for s in present if s.name != "recent"] + [
                s for s in present if s.name == "recent"]:
            room = shares[section.name] + carry
            if section.name == "keys":
                text = _key_index(keyed, seen, section.heading, room, self.tokenizer)
                texts["keys"] = text
                carry = room - (self.tokenizer.count(text) if text else 0)
                continue
            items = not_shown_again(ranked[section.name], texts_shown)
            packed = pack(items, budget=max(0, room), tokenizer=self.tokenizer,
                          header=section.heading, now=now, clean=shown_text, headed=True,
                          typed=section.name not in UNTYPED)
            omitted += packed.omitted
            if explain:
                report += explain_packing(items, packed, self.tokenizer, now=now,
                                          clean=shown_text, section=section.name)
            by_id = {r.id: r for r in items}
            shown[section.name] = [
                CuratedEntry(redacted(by_id[i.entry_id].entry), by_id[i.entry_id].score,
                             i.disclosure.value, section.name)
                for i in packed.included]
            seen.update(i.entry_id for i in packed.included)
            for i in packed.included:
                remember_shown(texts_shown, by_id[i.entry_id].entry)
            texts[section.name] = packed.content
            carry = room - packed.token_count
        order = [s.name for s in SECTIONS if texts.get(s.name)]
        parts = [texts[name] for name in order]
        content = SEPARATOR.join(parts)
        used = self.tokenizer.count(content)
        while used > budget and parts:  # separators merged differently: drop the tail
            dropped = order.pop()
            parts.pop()
            shown.pop(dropped, None)
            content = SEPARATOR.join(parts)
            used = self.tokenizer.count(content)
        entries = tuple(e for name in order for e in shown.get(name, []))
        consulted = sum(len(v) for v in ranked.values()) + len(keyed)
        return CuratedContext(content, used, budget, entries, omitted, consulted, "orient",
                              None, tuple(report))

    # candidates -----------------------------------------------------------------------
    def _ranked(self, flt: EntryFilter, now: datetime,
                weights: RankingWeights) -> dict[str, list[Ranked]]:
        claimed: set[str] = set()
        out: dict[str, list[Ranked]] = {}
        for name in CLAIM_ORDER:
            entries = [e for e in self._candidates(name, flt, now)
                       if e.id not in claimed and curatable(e)]
            claimed.update(e.id for e in entries)
            out[name] = _order(name, rank([Candidate(key_shown(e)) for e in entries], now, weights))
        return out

    def _candidates(self, name: str, flt: EntryFilter, now: datetime) -> list[MemoryEntry]:
        storage = self.ctx.storage
        limit = SECTION_LIMIT.get(name, DEFAULT_LIMIT)
        if name == "profile":
            return profile_entries(self.ctx, "user", base=flt, now=now)
        if name == "pinned":
            return storage.query(attrs.evolve(flt, pinned=True), limit=limit)
        types = _only(flt, *_TYPES[name])
        if not types:
            return []
        found = storage.query(attrs.evolve(flt, types=types), limit=limit)
        if name in ("decisions", "plans"):
            found = [e for e in found if e.valid_until is None or e.valid_until > now]
        if name == "procedures":
            found = [e for e in found if effectiveness(e) >= MIN_EFFECTIVENESS]
        if name == "summaries":
            found = found[:LAST_SESSIONS]
        return found

    # budget ---------------------------------------------------------------------------
    def _demand(self, section: Section, items: Sequence[Ranked], budget: int,
                now: datetime) -> int:
        """What showing all of ``items`` in full costs (measured up to ``budget``)."""
        lines: list[str] = []
        count = self.tokenizer.count
        used = 0
        for item in items:
            entry = item.entry
            line = render_full_line(attrs.evolve(entry, content=shown_text(entry)), now,
                                    typed=section.name not in UNTYPED)
            lines.append(line)
            used += count(line)
            if used > budget:
                return budget
        return min(budget, int(full_cost(lines, section.heading, self.tokenizer)))

    def _keys_demand(self, keyed: Sequence[MemoryEntry], budget: int) -> int:
        if not keyed:
            return 0
        count: Callable[[str], int] = self.tokenizer.count
        total = count("## Keys")
        for entry in keyed:
            total += count("\n" + _key_line(entry))
            if total > budget:
                return budget
        return total


def _order(name: str, ranked: list[Ranked]) -> list[Ranked]:
    """A section's candidates in the order it shows them."""
    if name == "profile":
        return spread_events(ranked, PROFILE_SESSION_DECAY)
    if name == "procedures":
        return sorted(ranked, key=lambda r: (-r.score * effectiveness(r.entry), r.id))
    if name in ("recent", "summaries"):
        return sorted(ranked, key=lambda r: (r.entry.valid_from, r.id), reverse=True)
    return ranked


def _only(flt: EntryFilter, *types: MemoryType) -> tuple[MemoryType, ...]:
    if flt.types is None:
        return types
    return tuple(t for t in types if t in flt.types)


def _key_line(entry: MemoryEntry) -> str:
    return f"- {shown_key_text(entry)} ({entry.type.value.lower()})"


def _key_index(keyed: Sequence[MemoryEntry], seen: set[str], heading: str, room: int,
               tokenizer: Any) -> str:
    """The keys of memories not shown above, as many as fit in ``room``."""
    entries = [e for e in keyed if e.id not in seen]
    if room <= 0 or not entries:
        return ""
    count: Callable[[str], int] = tokenizer.count
    lines = [heading]
    used = count(heading)
    for entry in entries:
        line = _key_line(entry)
        cost = count("\n" + line)
        if used + cost > room:
            lines.append(f"- … {len(entries) - len(lines) + 1} more keys")
            if count("\n".join(lines)) > room:
                lines.pop()
            break
        lines.append(line)
        used += cost
    text = "\n".join(lines) if len(lines) > 1 else ""
    while text and count(text) > room:
        lines.pop()
        text = "\n".join(lines) if len(lines) > 1 else ""
    return text
