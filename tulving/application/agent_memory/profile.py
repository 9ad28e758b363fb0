"""What is known about a subject (seed 004's user profile), read from what the memory holds.

Why derived on read rather than stored: the profile is a view over entries that already
supersede one another (by key, by entity and attribute, by restatement), so reading them
is always current and there is no second copy to drift. Which entries, in which order:
``tulving.application.retrieval.profile_reads`` (the briefing's first section reads the
same). Each line of the text names its entry's type, date and id (its provenance).
"""

from __future__ import annotations

from tulving.application.plumbing.context import MemoryContext
from tulving.application.retrieval.profile_reads import profile_entries
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.memory_reports import Profile, ProfileItem
from tulving.domain.reinforcement import evidence_of
from tulving.domain.types import MemoryType


def check_subject(subject: object) -> str:
    if not isinstance(subject, str) or not subject.strip() or len(subject) > 200:
        raise ValidationError("subject must be a non-empty string of at most 200 characters")
    return " ".join(subject.split())


def profile_line(e: MemoryEntry) -> str:
    """One line of the profile's text: the memory, its type, date and id (provenance)."""
    seen = evidence_of(e)
    parts = [e.type.value.lower(), e.valid_from.strftime("%Y-%m-%d")]
    if seen.count > 1:
        parts.append(f"said {seen.count} times, last {seen.last_seen:%Y-%m-%d}"
                     if seen.last_seen else f"said {seen.count} times")
    if e.conflict_ids:
        parts.append("disputed")
    if e.pinned:
        parts.append("pinned")
    parts.append(e.id)
    return f"- {' '.join(e.content.split())} ({' · '.join(parts)})"


def build_profile(ctx: MemoryContext, subject: str) -> Profile:
    subject = check_subject(subject)
    entries = profile_entries(ctx, subject)
    preferences: dict[str, ProfileItem] = {}
    facts: dict[str, ProfileItem] = {}
    other: list[ProfileItem] = []
    items: list[ProfileItem] = []
    for e in entries:
        seen = evidence_of(e)
        item = ProfileItem(e.id, e.content, e.value, bool(e.conflict_ids), e.valid_from,
                           e.type.value, e.pinned, seen.count, seen.last_seen)
        items.append(item)
        if e.type is MemoryType.PREFERENCE and e.attribute and e.attribute not in preferences:
            preferences[e.attribute] = item
        elif e.type is MemoryType.FACT and e.attribute and e.attribute not in facts:
            facts[e.attribute] = item
        else:
            other.append(item)
    lines = [f"What is known about {subject}:", *map(profile_line, entries)]
    if not entries:
        lines.append("- nothing yet")
    return Profile(subject, facts, preferences, tuple(other), tuple(e.id for e in entries),
                   "\n".join(lines), tuple(items))
