"""What is known about a subject (seed 004's user profile), read from semantic memory.

Why derived on read rather than stored: the profile is a view over PREFERENCE and FACT
entries that already supersede one another by (entity, attribute), so reading them is
always current and there is no second copy to drift. Disputed entries (``conflict_ids``)
are reported as such, not resolved here.
"""

from __future__ import annotations

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.memory_reports import Profile, ProfileItem
from tulving.domain.query import EntryFilter
from tulving.domain.types import MemoryType

_KNOWLEDGE = (MemoryType.PREFERENCE, MemoryType.FACT, MemoryType.DECISION, MemoryType.PLAN,
              MemoryType.PROCEDURE)


def subjects_for(ctx: MemoryContext, subject: str) -> list[str]:
    names = [subject]
    if subject.casefold() == "user" and ctx.identity.user_id:
        names.append(ctx.identity.user_id)
    return names


def build_profile(ctx: MemoryContext, subject: str, *, limit: int = 200) -> Profile:
    if not isinstance(subject, str) or not subject.strip() or len(subject) > 200:
        raise ValidationError("subject must be a non-empty string of at most 200 characters")
    visible = ctx.visible_partitions()
    entries: list[MemoryEntry] = []
    for name in subjects_for(ctx, subject.strip()):
        entries += ctx.storage.query(
            EntryFilter(partitions=visible, entity=name, entity_any_case=True,
                        types=_KNOWLEDGE), limit=limit)
    entries = list({e.id: e for e in entries}.values())  # "user" may also be the user_id
    entries.sort(key=lambda e: e.created_at, reverse=True)
    preferences: dict[str, ProfileItem] = {}
    facts: dict[str, ProfileItem] = {}
    other: list[ProfileItem] = []
    for e in entries:
        item = ProfileItem(e.id, e.content, e.value, bool(e.conflict_ids), e.valid_from)
        if e.type is MemoryType.PREFERENCE and e.attribute:
            preferences.setdefault(e.attribute, item)
        elif e.type is MemoryType.FACT and e.attribute:
            facts.setdefault(e.attribute, item)
        else:
            other.append(attrs.evolve(item, type=e.type.value))
    lines = [f"What is known about {subject}:"]
    for group in (facts, preferences):
        for item in group.values():
            lines.append(f"- {item.content}{' (disputed)' if item.disputed else ''}")
    for item in other:
        lines.append(f"- [{item.type}] {item.content}")
    if len(lines) == 1:
        lines.append("- nothing yet")
    return Profile(subject, facts, preferences, tuple(other), tuple(e.id for e in entries),
                   "\n".join(lines))
