"""Which entries a subject's profile shows, in which order: read by ``profile()`` and by
the briefing's "About the user" section alike, so the two cannot drift.

What it reads (``profile_entries``): every active PREFERENCE and FACT about the subject,
whether it says so in its structured fact, in what ``remember()`` recorded as its subject,
or in its text (``tulving.domain.about_user``); the subject's other structured knowledge
(decisions, plans, procedures stated about it); and pinned entries about it. Superseded,
archived and expired entries are left out, as is what curation may not show (held for
review, rejected). The order is what a personalising agent needs first (``profile_order``):
what someone pinned, then preferences (how to answer), then facts (who they are), then the
rest; within each the more important, then the more recently confirmed.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.about_user import is_about, subject_names
from tulving.domain.entry import MemoryEntry
from tulving.domain.injection import is_curatable
from tulving.domain.query import EntryFilter
from tulving.domain.reinforcement import evidence_of
from tulving.domain.similarity import NearDuplicateIndex
from tulving.domain.types import MemoryType

_KNOWLEDGE = (MemoryType.PREFERENCE, MemoryType.FACT, MemoryType.DECISION, MemoryType.PLAN,
              MemoryType.PROCEDURE)
_ABOUT_TYPES = (MemoryType.PREFERENCE, MemoryType.FACT)
#: The newest preferences and facts read to find those about the subject by their text.
RECENT_READ = 2000
#: Pinned entries read at most.
PINNED_READ = 500
#: Attributes whose value is a name the subject goes by.
NAME_ATTRIBUTES = ("name", "first_name", "full_name", "nickname")


def profile_entries(ctx: MemoryContext, subject: str, *, base: EntryFilter | None = None,
                    now: datetime | None = None) -> list[MemoryEntry]:
    """The entries the profile of ``subject`` shows, in ``profile_order``. ``base`` narrows
    the reads (the briefing's filter); by default every partition this identity sees."""
    flt = base if base is not None else EntryFilter(partitions=ctx.visible_partitions())
    when = now if now is not None else ctx.clock.now()
    names = subject_names(subject, ctx.identity.user_id)
    found: dict[str, MemoryEntry] = {}
    for name in sorted(names):
        for e in ctx.storage.query(_narrow(flt, _KNOWLEDGE, entity=name), limit=RECENT_READ):
            found[e.id] = e
    known = [str(e.value) for e in found.values()
             if e.attribute in NAME_ATTRIBUTES and e.value and e.type is MemoryType.FACT]
    names = subject_names(subject, ctx.identity.user_id, known)
    recent = ctx.storage.query(_narrow(flt, _ABOUT_TYPES), limit=RECENT_READ)
    pinned = ctx.storage.query(_narrow(flt, None, pinned=True), limit=PINNED_READ)
    for e in (*recent, *pinned):
        if e.id not in found and is_about(e, names):
            found[e.id] = e
    live = [e for e in found.values() if is_curatable(e) and e.is_active
            and (e.valid_until is None or e.valid_until > when)]
    return latest_only(profile_order(live))


def _narrow(flt: EntryFilter, types: tuple[MemoryType, ...] | None, *,
            entity: str | None = None, pinned: bool | None = None) -> EntryFilter:
    wanted = types if flt.types is None or types is None else tuple(
        t for t in types if t in flt.types) or ()
    return attrs.evolve(flt, types=wanted if types is not None else flt.types,
                        entity=entity, entity_any_case=entity is not None,
                        pinned=pinned if pinned is not None else flt.pinned)


def profile_order(entries: list[MemoryEntry]) -> list[MemoryEntry]:
    """Pinned first, then preferences, facts and the rest; within each, importance, then
    the latest confirmation (a restatement's last seen, else when it was said), then id."""
    group = {MemoryType.PREFERENCE: 1, MemoryType.FACT: 2}

    def key(e: MemoryEntry) -> tuple[int, float, float, str]:
        seen = evidence_of(e).last_seen or e.valid_from
        return (0 if e.pinned else group.get(e.type, 3), -e.importance, -seen.timestamp(), e.id)

    return sorted(entries, key=key)


def latest_only(ordered: list[MemoryEntry]) -> list[MemoryEntry]:
    """One entry per structured fact (the newest by event time, and every side of a
    dispute) and per near-identical text: a subject's attribute has one current value,
    a sentence is said once."""
    by_fact: dict[tuple[str, str, str], MemoryEntry] = {}
    for e in ordered:
        if e.entity and e.attribute:
            slot = (e.type.value, e.entity.casefold(), e.attribute)
            held = by_fact.get(slot)
            if held is None or (e.valid_from, e.id) > (held.valid_from, held.id):
                by_fact[slot] = e
    kept_facts = {e.id for e in by_fact.values()}
    texts = NearDuplicateIndex()
    out: list[MemoryEntry] = []
    for e in ordered:
        if e.entity and e.attribute and e.id not in kept_facts and not e.conflict_ids:
            continue  # an older value (a disputed one stays: the dispute is news)
        if texts.find(e.content) is not None:
            continue
        texts.add(e.id, e.content)
        out.append(e)
    return out
