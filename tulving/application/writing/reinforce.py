"""Write-time reinforcement: a restated preference or fact adds to the existing one's
evidence instead of adding a row (``tulving.domain.reinforcement`` says what a restatement
is and where its threshold comes from).

Which writes reinforce: a PREFERENCE or FACT without a key, deduplicated (the default),
that states again an active entry of the same type and partition about the same subject:
the same text (content hash), the same value of the same structured fact, or a text whose
restatement score reaches the threshold. The existing entry keeps its id, content and
provenance; its ``metadata["evidence"]`` counts one more statement, moves ``last_seen``
to when this one was said (its ``valid_from``) and adds the turns it was read from (its
``source_entry_ids``). A new value of a structured fact is not a restatement: rule 2 of
``contradictions`` supersedes as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.about_user import stated_subject, subject_names
from tulving.domain.entry import MemoryEntry
from tulving.domain.lexical import query_terms
from tulving.domain.query import EntryFilter
from tulving.domain.reinforcement import (
    RESTATEMENT_THRESHOLD,
    TextReadings,
    evidence_of,
    reinforced,
    restatement_score,
)
from tulving.domain.types import MemoryType

REINFORCED_TYPES = (MemoryType.PREFERENCE, MemoryType.FACT)
#: Entries of the batch itself compared with a new one at most (a long transcript's).
BATCH_COMPARISONS = 200
#: Existing entries the lexical search proposes for a new one.
CANDIDATES = 8


def reinforces(entry: MemoryEntry) -> bool:
    """Whether ``entry`` is a write that a restatement may fold into an existing one."""
    return entry.type in REINFORCED_TYPES and entry.key is None


def with_evidence(old: MemoryEntry, new: MemoryEntry) -> MemoryEntry:
    """``old`` with ``new`` counted as one more statement of it."""
    evidence = reinforced(evidence_of(old), new.valid_from, new.source_entry_ids)
    return attrs.evolve(old, metadata={**old.metadata, "evidence": evidence.as_metadata()},
                        updated_at=max(old.updated_at, new.created_at))


def same_subject(a: MemoryEntry, b: MemoryEntry) -> bool:
    sa, sb = stated_subject(a), stated_subject(b)
    return sa is None or sb is None or sa.casefold() == sb.casefold()


def _names(entry: MemoryEntry, user_id: str | None) -> frozenset[str]:
    subject = stated_subject(entry)
    return subject_names(subject or "user", user_id) | subject_names("user", user_id)


def best_restated(entry: MemoryEntry, candidates: Iterable[MemoryEntry],
                  user_id: str | None, readings: TextReadings | None = None,
                  ) -> MemoryEntry | None:
    """The candidate ``entry`` restates best (at or above the threshold), or None;
    ``readings``: the batch's memo of the texts it has read (one per plan)."""
    names = _names(entry, user_id)
    best: tuple[float, str] | None = None
    chosen: MemoryEntry | None = None
    for old in candidates:
        if (old.id == entry.id or not old.is_active or old.type is not entry.type
                or old.partition != entry.partition or old.key is not None
                or not same_subject(old, entry)):
            continue
        if old.entity and old.attribute and entry.entity and entry.attribute:
            continue  # two structured facts: rule 2 decides
        score = restatement_score(entry.content, old.content, names, readings)
        if score >= RESTATEMENT_THRESHOLD and (best is None or (score, old.id) > best):
            best, chosen = (score, old.id), old
    return chosen


def lexical_candidates(ctx: MemoryContext, entry: MemoryEntry) -> list[MemoryEntry]:
    """Active entries of ``entry``'s partition and type sharing its words (a few)."""
    terms = query_terms(entry.content)
    if not terms:
        return []
    hits = ctx.storage.lexical_search(
        terms, EntryFilter(partitions=(entry.partition,), types=(entry.type,)), CANDIDATES)
    return ctx.storage.get_many([h.id for h in hits]) if hits else []


def batch_candidates(inserts: Sequence[MemoryEntry], entry: MemoryEntry) -> list[MemoryEntry]:
    """The entries inserted earlier in the same batch that could be restated."""
    return [e for e in inserts[-BATCH_COMPARISONS:] if e.type is entry.type]
