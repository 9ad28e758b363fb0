"""Write-time decisions: add, update, invalidate, noop, or flag a conflict.

Why at write time and deterministic: an agent that restates a fact, or learns a new value
for one, must not end up with two "current" answers, and this must hold with no LLM. The
rules, in order, for each entry about to be written (seed 002's consolidator, ADR-014):

1. Same content hash, same type, key and structured fact as an active entry of the same
   partition -> NOOP: the existing entry is returned, nothing is written.
2. Structured fact (entity + attribute) already held with a different value -> the old
   entry is superseded (archived ``superseded``, ``valid_until`` set, linked both ways),
   unless the new source has lower trust: a low-trust source cannot overwrite a
   high-trust fact, so the new entry is stored and both are flagged (``conflict_ids``).
   The same value again is a NOOP.
3. With a vector (batches of at most ``VECTOR_CHECK_MAX_BATCH``, reusing the vector the
   write computes anyway): cosine >= ``UPDATE_THRESHOLD`` with an active entry of the same
   type and partition -> UPDATE (the new wording supersedes the old one), or NOOP when the
   new source has lower trust. ``CONFLICT_THRESHOLD`` <= cosine < ``UPDATE_THRESHOLD``
   between semantic entries whose content diverges (different numbers, or a negation on
   one side only) -> both are flagged, never blocked.

Rules 1 and 3 are dedup and only apply to semantic and procedural types (an episode that
happens twice happened twice); ``store(..., dedup=False)`` turns them off. Rule 2 always
applies: it is the meaning of entity/attribute/value.

A PREFERENCE or FACT that restates an active one (rule 1's same text, rule 2's same value,
or, between 1 and 2, a text whose restatement score reaches its threshold) REINFORCEs it
instead of being a NOOP: the existing entry's evidence counts one more statement
(``writing.reinforce``); no row is added.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.application.writing.reinforce import (
    batch_candidates,
    best_restated,
    lexical_candidates,
    reinforces,
    with_evidence,
)
from tulving.domain.entry import MemoryEntry
from tulving.domain.query import EntryFilter, ScoredId
from tulving.domain.reinforcement import TextReadings
from tulving.domain.types import ArchiveReason, CognitiveKind, MemoryType
from tulving.ports.storage import WriteOutcome

UPDATE_THRESHOLD = 0.95
CONFLICT_THRESHOLD = 0.85
#: Larger batches (bulk imports, long transcripts) skip the per-entry vector query.
VECTOR_CHECK_MAX_BATCH = 32
_NEIGHBOURS = 8
#: Conflict flags per entry are capped: a flag asks for review, a hundred flags help no one.
MAX_FLAGS = 8
_SEMANTIC_TYPES = (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.DECISION)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_NEGATION = re.compile(r"\b(not|no|never|none|nobody|nothing|cannot)\b|n't\b", re.IGNORECASE)


def dedups(entry: MemoryEntry) -> bool:
    return entry.type.cognitive_kind is not CognitiveKind.EPISODIC


def diverges(a: str, b: str) -> bool:
    """Whether two similar texts say different things, decidably without a model."""
    numbers_a, numbers_b = set(_NUMBER.findall(a)), set(_NUMBER.findall(b))
    if (numbers_a or numbers_b) and numbers_a != numbers_b:
        return True
    return bool(_NEGATION.search(a)) != bool(_NEGATION.search(b))


def same_value(a: str | None, b: str | None) -> bool:
    return " ".join((a or "").split()).casefold() == " ".join((b or "").split()).casefold()


@attrs.define
class WritePlan:
    """What one ``_write`` will do: inserts, changes of existing entries, and for each
    batch item either the index of its insert or the existing entry (NOOP).

    ``updates`` is the plan's own view of the entries it changes (so later items of the
    batch see earlier decisions); the store is changed only by targeted updates derived
    from it: ``Storage.supersede_entries`` for the superseded ones and
    ``Storage.link_conflicts`` for ``links``, the conflict pairs (both sides)."""

    inserts: list[tuple[MemoryEntry, Any]] = attrs.field(factory=list)
    slots: list[int | MemoryEntry] = attrs.field(factory=list)
    updates: dict[str, MemoryEntry] = attrs.field(factory=dict)
    #: Existing entries whose evidence this plan adds to (``writing.reinforce``).
    reinforced: dict[str, MemoryEntry] = attrs.field(factory=dict)
    links: set[tuple[str, str]] = attrs.field(factory=set)
    unindex: list[str] = attrs.field(factory=list)
    decisions: list[str] = attrs.field(factory=list)

    def outcomes(self, written: Sequence[WriteOutcome]) -> list[WriteOutcome]:
        out: list[WriteOutcome] = []
        for slot, decision in zip(self.slots, self.decisions, strict=True):
            if isinstance(slot, int):
                out.append(attrs.evolve(written[slot], decision=decision))
            else:
                out.append(WriteOutcome(entry=self.reinforced.get(slot.id, slot),
                                        decision=decision))
        return out

    def reinforce(self, old: MemoryEntry, new: MemoryEntry) -> int | MemoryEntry:
        """Count ``new`` as one more statement of ``old`` (an entry of this batch or of
        the store); returns the slot the item takes."""
        for i, (inserted, vector) in enumerate(self.inserts):
            if inserted.id == old.id:
                self.inserts[i] = (with_evidence(inserted, new), vector)
                return i
        held = self.reinforced.get(old.id, old)
        self.reinforced[old.id] = with_evidence(held, new)
        return self.reinforced[old.id]


def _supersede(old: MemoryEntry, new: MemoryEntry, now: datetime) -> MemoryEntry:
    until = new.valid_from if new.valid_from > old.valid_from else now
    return attrs.evolve(
        old, archived_at=now, archive_reason=ArchiveReason.SUPERSEDED, superseded_by=new.id,
        valid_until=old.valid_until or until, expired_at=old.expired_at or now, updated_at=now,
    )


def _flag(entry: MemoryEntry, other_id: str, now: datetime | None = None) -> MemoryEntry:
    if other_id in entry.conflict_ids:
        return entry
    changes: dict[str, Any] = {"conflict_ids": (*entry.conflict_ids, other_id)}
    if now is not None:
        changes["updated_at"] = now
    return attrs.evolve(entry, **changes)


def plan_writes(
    ctx: MemoryContext,
    entries: Sequence[MemoryEntry],
    vectors: Sequence[Any],
    dedup: Sequence[bool],
    now: datetime,
    may_change: Callable[[MemoryEntry], bool] = lambda _old: True,
    reads: PlanReads | None = None,
) -> WritePlan:
    """``may_change(old)`` says whether this writer may supersede ``old``: an entry it
    may not (another agent's shared entry) is flagged as a conflict, never superseded.
    ``reads`` is where the plan reads existing entries from (default: the store and the
    vector index now, :class:`StoreReads`)."""
    plan = WritePlan()
    reads = reads if reads is not None else StoreReads(ctx)
    user_id = ctx.identity.user_id
    check_vectors = checks_vectors(ctx, entries)
    batch_hashes: dict[tuple[str, str], int] = {}
    batch_facts: dict[tuple[str, str, str], int] = {}
    readings = TextReadings()  # this plan's texts, read once (dropped with the plan)

    def current(entry: MemoryEntry) -> MemoryEntry:
        return plan.updates.get(entry.id, entry)

    for entry, vector, wants_dedup in zip(entries, vectors, dedup, strict=True):
        use_dedup = wants_dedup and dedups(entry)
        folds = use_dedup and reinforces(entry)
        # 1. exact restatement
        if use_dedup:
            existing = _same_hash(reads, entry, plan, batch_hashes)
            if existing is not None:
                plan.slots.append(plan.reinforce(existing, entry) if folds else existing)
                plan.decisions.append("reinforce" if folds else "noop")
                continue
        # 1b. a restatement in other words (structured facts: rule 2)
        if folds and (entry.entity is None or entry.attribute is None):
            restated = best_restated(
                entry, [current(e) for e in (*batch_candidates(
                    [e for e, _ in plan.inserts], entry), *reads.restated(entry))],
                user_id, readings)
            if restated is not None:
                plan.slots.append(plan.reinforce(restated, entry))
                plan.decisions.append("reinforce")
                continue
        decision = "add"
        # 2. structured fact
        if entry.entity is not None and entry.attribute is not None:
            olds = _holders(reads, entry, plan, batch_facts)
            noop: MemoryEntry | None = None
            for old in olds:
                old = current(old)
                if not old.is_active:
                    continue
                if same_value(old.value, entry.value) and use_dedup:
                    noop = old
                    break
                if entry.trust + 1e-9 < old.trust or not may_change(old):
                    entry = _flag(entry, old.id)
                    plan.updates[old.id] = _flag(old, entry.id, now)
                    plan.links.add((old.id, entry.id))
                    decision = "conflict"
                else:
                    plan.updates[old.id] = _supersede(old, entry, now)
                    plan.unindex.append(old.id)
                    entry = attrs.evolve(entry, supersedes=entry.supersedes or old.id)
                    decision = "invalidate"
            if noop is not None:
                plan.slots.append(plan.reinforce(noop, entry) if folds else noop)
                plan.decisions.append("reinforce" if folds else "noop")
                continue
        # 3. near duplicates and undecidable conflicts, by cosine
        elif wants_vector_check(entry, vector, use_dedup, check_vectors):
            outcome = _by_vector(reads, entry, vector, plan, now, current, may_change)
            if isinstance(outcome, MemoryEntry) and outcome.id != entry.id:
                plan.slots.append(outcome)
                plan.decisions.append("noop")
                continue
            if outcome is not None:
                entry, decision = outcome if isinstance(outcome, tuple) else (outcome, decision)
        index = len(plan.inserts)
        plan.inserts.append((entry, vector))
        plan.slots.append(index)
        plan.decisions.append(decision)
        batch_hashes.setdefault((entry.partition, entry.content_hash), index)
        if entry.entity is not None and entry.attribute is not None:
            batch_facts[(entry.partition, entry.entity, entry.attribute)] = index
    # Conflict flags on entries inserted in this batch must point both ways too.
    for i, (entry, vector) in enumerate(plan.inserts):
        if entry.id in plan.updates:
            plan.inserts[i] = (plan.updates.pop(entry.id), vector)
    return plan


def _same_hash(
    reads: PlanReads, entry: MemoryEntry, plan: WritePlan, batch: dict[tuple[str, str], int]
) -> MemoryEntry | None:
    index = batch.get((entry.partition, entry.content_hash))
    candidates: list[MemoryEntry] = []
    if index is not None:
        candidates.append(plan.inserts[index][0])
    candidates += reads.twins(entry)
    for old in candidates:
        old = plan.updates.get(old.id, old)
        if (
            old.is_active and old.type is entry.type and old.key == entry.key
            and old.entity == entry.entity and old.attribute == entry.attribute
            and same_value(old.value, entry.value)
        ):
            return old
    return None


def _holders(
    reads: PlanReads, entry: MemoryEntry, plan: WritePlan, batch: dict[tuple[str, str, str], int]
) -> list[MemoryEntry]:
    olds = reads.holders(entry)
    index = batch.get((entry.partition, entry.entity or "", entry.attribute or ""))
    if index is not None:
        # An earlier item of the same batch states the same fact: the later one wins.
        olds = [plan.inserts[index][0], *olds]
    return olds


def _by_vector(
    reads: PlanReads, entry: MemoryEntry, vector: Any, plan: WritePlan, now: datetime,
    current: Callable[[MemoryEntry], MemoryEntry],
    may_change: Callable[[MemoryEntry], bool],
) -> MemoryEntry | tuple[MemoryEntry, str] | None:
    hits = reads.neighbours(entry, vector)
    if not hits:
        return None
    decision = "add"
    for old, score in hits:
        old = current(old)
        if (not old.is_active or old.partition != entry.partition or old.type is not entry.type
                or old.key is not None or not may_change(old)):
            continue
        if score >= UPDATE_THRESHOLD and not diverges(old.content, entry.content):
            if entry.trust + 1e-9 < old.trust or old.pinned:
                return old  # NOOP: a weaker restatement adds nothing
            plan.updates[old.id] = _supersede(old, entry, now)
            plan.unindex.append(old.id)
            return attrs.evolve(entry, supersedes=old.id), "update"
        if (entry.type in _SEMANTIC_TYPES and len(entry.conflict_ids) < MAX_FLAGS
                and len(old.conflict_ids) < MAX_FLAGS and diverges(old.content, entry.content)):
            entry = _flag(entry, old.id)
            plan.updates[old.id] = _flag(old, entry.id, now)
            plan.links.add((old.id, entry.id))
            decision = "conflict"
    return (entry, decision) if decision != "add" else None


def checks_vectors(ctx: MemoryContext, entries: Sequence[MemoryEntry]) -> bool:
    """Whether rule 3 runs for this batch at all (an index, and a batch small enough)."""
    return ctx.vectors is not None and len(entries) <= VECTOR_CHECK_MAX_BATCH


def wants_vector_check(entry: MemoryEntry, vector: Any, use_dedup: bool,
                       check_vectors: bool) -> bool:
    """Whether rule 3 may read ``entry``'s neighbours (rule 2 decides facts instead)."""
    return (use_dedup and check_vectors and vector is not None and entry.key is None
            and (entry.entity is None or entry.attribute is None))


class PlanReads(Protocol):
    """What a plan reads of existing entries: the store now (:class:`StoreReads`), or
    what was read before the tenant's write lock checked under it (``write_plans``)."""

    def twins(self, entry: MemoryEntry) -> list[MemoryEntry]:
        """Active entries of ``entry``'s partition with its content hash (a few)."""
        ...

    def holders(self, entry: MemoryEntry) -> list[MemoryEntry]:
        """Active entries of ``entry``'s partition stating its entity and attribute,
        newest first (at most 20)."""
        ...

    def neighbours(self, entry: MemoryEntry, vector: Any) -> list[tuple[MemoryEntry, float]]:
        """The nearest indexed entries to ``vector`` (``entry``'s; of any partition)
        whose cosine is at least ``CONFLICT_THRESHOLD``, best first, among the
        ``NEIGHBOURS`` nearest."""
        ...

    def restated(self, entry: MemoryEntry) -> list[MemoryEntry]:
        """Active entries of ``entry``'s partition and type that share its words (the
        candidates a restatement is looked for among; a few)."""
        ...


#: How many nearest entries rule 3 looks at.
NEIGHBOURS = _NEIGHBOURS
#: At most this many exact twins are read (one is the common case).
TWINS_READ = 5
#: At most this many holders of a fact are read.
HOLDERS_READ = 20


class StoreReads:
    """The plan's reads from the store and the vector index as they are now."""

    def __init__(self, ctx: MemoryContext) -> None:
        self.ctx = ctx

    def twin_ids(self, entry: MemoryEntry) -> list[str]:
        # ids first: the common case (no twin) then costs one index probe, no row decoding
        return sorted(self.ctx.storage.ids_matching(
            EntryFilter(partitions=(entry.partition,), content_hash=entry.content_hash)))

    def twins(self, entry: MemoryEntry) -> list[MemoryEntry]:
        twins = self.twin_ids(entry)
        return self.ctx.storage.get_many(twins[:TWINS_READ]) if twins else []

    def holders(self, entry: MemoryEntry) -> list[MemoryEntry]:
        return list(self.ctx.storage.query(
            EntryFilter(partitions=(entry.partition,), entity=entry.entity,
                        attribute=entry.attribute),
            limit=HOLDERS_READ,
        ))

    def scored(self, vector: Any, k: int = NEIGHBOURS) -> list[ScoredId]:
        assert self.ctx.vectors is not None
        return list(self.ctx.vectors.query(vector, k))

    def restated(self, entry: MemoryEntry) -> list[MemoryEntry]:
        return lexical_candidates(self.ctx, entry)

    def neighbours(self, entry: MemoryEntry, vector: Any) -> list[tuple[MemoryEntry, float]]:
        hits = [h for h in self.scored(vector) if h.score >= CONFLICT_THRESHOLD]
        if not hits:
            return []
        olds = {e.id: e for e in self.ctx.storage.get_many([h.id for h in hits])}
        return [(olds[h.id], h.score) for h in hits if h.id in olds]
