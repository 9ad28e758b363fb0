"""What a read asks of storage, and what scored reads return.

One filter type serves every adapter, so "archived never returned" and "only visible
partitions" are stated once here and checked once by the contract suite.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from tulving.domain.entry import MemoryEntry
from tulving.domain.types import ArchiveReason, MemoryType

#: ``EntryFilter(partitions=STORE_WIDE)``: every tenant; maintenance only.
STORE_WIDE = None


@attrs.frozen
class EntryFilter:
    """Conjunction of conditions; ``None`` means "no condition".

    ``partitions`` is mandatory: a read without an identity has nothing to see (an empty
    tuple matches nothing). ``STORE_WIDE`` (``None``) matches every partition and is for
    store maintenance only (index rebuilds, re-embedding, erasure), never for reads on
    behalf of an agent. With
    ``as_of`` set, the filter selects entries as the store held them at that transaction
    time (archived ones included if they were current then) instead of active entries.
    """

    partitions: tuple[str, ...] | None
    types: tuple[MemoryType, ...] | None = None
    tags: tuple[str, ...] | None = None  # any of these tags
    without_tags: tuple[str, ...] | None = None  # none of these tags (tool_items)
    key_prefix: str | None = None
    since: datetime | None = None  # event time (valid_from) lower bound, inclusive
    until: datetime | None = None  # event time upper bound, inclusive
    include_archived: bool = False
    archive_reasons: tuple[ArchiveReason, ...] | None = None  # only these (implies archived)
    session_id: str | None = None
    pinned: bool | None = None
    as_of: datetime | None = None
    ids: tuple[str, ...] | None = None
    entity: str | None = None
    #: Match ``entity`` regardless of letter case ("user", "User"): for reads by a
    #: person's or agent's wording (profile), never for the write-time fact rules.
    entity_any_case: bool = False
    attribute: str | None = None
    content_hash: str | None = None
    #: Only ids after this one (ids sort by creation time): keyset pagination, stable
    #: while other writers add entries.
    after_id: str | None = None

    @property
    def identity_only(self) -> bool:
        """Asks for nothing but the visible active entries: nearly every hit of an index
        over the store's active entries passes it, so readers over-fetch little."""
        # leaving out the few entries of a reserved tag (tool items) keeps nearly every hit
        return attrs.evolve(self, without_tags=None) == EntryFilter(partitions=self.partitions)


@attrs.frozen
class ScoredId:
    """An id with a score where higher always means more relevant (never a distance)."""

    id: str
    score: float


@attrs.frozen
class SearchResult:
    """One search hit: the entry, its score in [0, 1] (higher is better, comparable
    within one result list) and the mode that found it."""

    entry: MemoryEntry
    score: float
    match_type: str
    """``"hybrid"``, ``"semantic"``, ``"lexical"`` or ``"key"``."""
    similarity: float | None = None
    """The cosine similarity of the query's and the entry's embeddings (in [-1, 1]), the
    same for the same pair whatever else is in the store; ``None`` where no embedding
    took part (lexical or key search, no embedder, or an entry without a vector). What a
    framework that defines its score as semantic similarity (LangGraph's stores) reports."""


#: Archive reasons that hide an entry even from as-of (time-travel) reads.
HIDDEN_FROM_HISTORY = ("rolled_back",)


def entry_matches(entry: MemoryEntry, flt: EntryFilter) -> bool:
    """The reference semantics of ``EntryFilter``; SQL adapters must agree with it
    (the storage contract suite checks them against each other's observable results)."""
    if flt.partitions is not None and entry.partition not in flt.partitions:
        return False
    if flt.as_of is not None:
        if not entry.known_at(flt.as_of):
            return False
        if entry.archive_reason is not None and entry.archive_reason.value in HIDDEN_FROM_HISTORY:
            return False
    elif flt.archive_reasons is not None:
        if entry.archive_reason not in flt.archive_reasons:
            return False
    elif not flt.include_archived and entry.archived_at is not None:
        return False
    if flt.types is not None and entry.type not in flt.types:
        return False
    if flt.without_tags is not None and set(flt.without_tags).intersection(entry.tags):
        return False
    if flt.tags is not None and not set(flt.tags).intersection(entry.tags):
        return False
    if flt.key_prefix is not None and not (entry.key or "").startswith(flt.key_prefix):
        return False
    if flt.key_prefix is not None and entry.key is None:
        return False
    if flt.since is not None and entry.valid_from < flt.since:
        return False
    if flt.until is not None and entry.valid_from > flt.until:
        return False
    if flt.session_id is not None and entry.session_id != flt.session_id:
        return False
    if flt.pinned is not None and entry.pinned != flt.pinned:
        return False
    if flt.ids is not None and entry.id not in flt.ids:
        return False
    if flt.entity is not None and not (
        entry.entity == flt.entity
        or (flt.entity_any_case and entry.entity is not None
            and entry.entity.lower() == flt.entity.lower())
    ):
        return False
    if flt.attribute is not None and entry.attribute != flt.attribute:
        return False
    if flt.after_id is not None and entry.id <= flt.after_id:
        return False
    return flt.content_hash is None or entry.content_hash == flt.content_hash
