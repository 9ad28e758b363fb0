"""The memory entry: one typed, attributed, time-stamped piece of agent memory.

Entries are immutable values; a change produces a new value with ``attrs.evolve`` and an
adapter persists it. Content is always ``str`` (ADR-007) and metadata JSON-serialisable,
so nothing executable ever reaches storage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

import attrs

from tulving.domain.decay import decayed_importance
from tulving.domain.masks import Masks
from tulving.domain.types import ArchiveReason, MemoryType, ReviewStatus, Scope, SourceType


def content_hash(content: str) -> str:
    """Hash of the normalised content: equal text (modulo whitespace/case) dedups."""
    normal = " ".join(content.split()).casefold()
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


@attrs.frozen(eq=True, hash=False)
class MemoryEntry:
    """One memory as stored: an immutable value (a change is a new version).

    Its fields, by group: identity and scope (``agent_id``, ``user_id``,
    ``workspace_id``, ``scope`` and the ``partition`` it lives in); addressing and weight
    (``key``, ``tags``, ``importance``, ``pinned``, ``confidence``); provenance
    (``source_type``, ``source_instance``, ``model_id``, ``trust``, ``session_id``, and
    the links ``supersedes``/``superseded_by``, ``related_to``, ``source_entry_ids``,
    ``conflict_ids``); both time axes (event time ``valid_from``/``valid_until``,
    transaction time ``created_at`` = ``recorded_at`` and ``expired_at``); use
    (``last_accessed_at``, ``access_count``); archival (``archived_at``,
    ``archive_reason``); a structured fact (``entity``, ``attribute``, ``value``); a
    procedure's outcomes (``success_count``, ``failure_count``); and ``metadata``,
    ``content_hash`` and ``signature``. ``is_active`` is true until it is archived.
    """

    id: str
    content: str
    type: MemoryType
    # identity and scope
    agent_id: str
    partition: str
    scope: Scope = Scope.AGENT
    user_id: str | None = None
    workspace_id: str | None = None
    # addressing and weight
    key: str | None = None
    tags: tuple[str, ...] = ()
    importance: float = 0.5
    pinned: bool = False
    confidence: float = 1.0
    # provenance
    source_type: SourceType = SourceType.AGENT_RUN
    source_instance: str | None = None
    model_id: str | None = None
    trust: float = 0.7
    session_id: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    related_to: tuple[str, ...] = ()
    source_entry_ids: tuple[str, ...] = ()
    conflict_ids: tuple[str, ...] = ()
    review_status: ReviewStatus = ReviewStatus.NONE
    # time: transaction time (created_at = recorded_at, expired_at) and event time
    created_at: datetime = attrs.field(kw_only=True)
    updated_at: datetime = attrs.field(kw_only=True)
    valid_from: datetime = attrs.field(kw_only=True)
    valid_until: datetime | None = attrs.field(default=None, kw_only=True)
    expired_at: datetime | None = attrs.field(default=None, kw_only=True)
    last_accessed_at: datetime = attrs.field(kw_only=True)
    access_count: int = attrs.field(default=0, kw_only=True)
    archived_at: datetime | None = attrs.field(default=None, kw_only=True)
    archive_reason: ArchiveReason | None = attrs.field(default=None, kw_only=True)
    # structured fact
    entity: str | None = attrs.field(default=None, kw_only=True)
    attribute: str | None = attrs.field(default=None, kw_only=True)
    value: str | None = attrs.field(default=None, kw_only=True)
    # procedures
    success_count: int = attrs.field(default=0, kw_only=True)
    failure_count: int = attrs.field(default=0, kw_only=True)
    # free-form and integrity
    metadata: Mapping[str, Any] = attrs.field(factory=dict, kw_only=True)
    content_hash: str = attrs.field(default="", kw_only=True)
    signature: str | None = attrs.field(default=None, kw_only=True)
    #: Where the texts are masked, found when written (a cache: see ``masks``); not part
    #: of the entry's value.
    masks: Masks | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)

    @property
    def recorded_at(self) -> datetime:
        return self.created_at

    @property
    def is_active(self) -> bool:
        return self.archived_at is None

    @property
    def derived_from(self) -> str | None:
        """The one memory this one restates (a fact read off a single turn), or None:
        while that source is visible, search and curate show it in this one's stead."""
        return _restated(self.id, self.source_entry_ids)

    def importance_at(self, now: datetime) -> float:
        """Importance decayed lazily since the last access (see ``decay``)."""
        return decayed_importance(
            self.importance, self.type, self.last_accessed_at, now, pinned=self.pinned
        )

    def known_at(self, at: datetime) -> bool:
        """Whether the store held this entry as current at transaction time ``at``."""
        return self.created_at <= at and (self.expired_at is None or self.expired_at > at)


def evictable(entry: MemoryEntry) -> bool:
    """Whether anything automatic (decay eviction, retention TTLs and caps) may archive
    ``entry``: DECISION and pinned entries leave only on an explicit request (ADR-006)."""
    return not entry.pinned and entry.type is not MemoryType.DECISION


def _restated(entry_id: str, sources: tuple[str, ...]) -> str | None:
    if len(sources) == 1 and sources[0] != entry_id:
        return sources[0]
    return None


class Brief(Protocol):
    """What search's second stage reads of a candidate (an entry or an ``EntryBrief``)."""

    @property
    def id(self) -> str: ...

    @property
    def content(self) -> str: ...

    @property
    def valid_from(self) -> datetime: ...

    @property
    def derived_from(self) -> str | None: ...


@attrs.frozen
class EntryBrief:
    """A candidate as search's second stage sees it: its text, its event time and the
    memory it restates. Search reranks ~50 candidates to return ~10; reading these four
    fields instead of whole entries (40 columns, seven timestamps parsed) measured
    about 1.5 ms off a hybrid search."""

    id: str
    content: str
    valid_from: datetime
    source_entry_ids: tuple[str, ...] = ()

    @property
    def derived_from(self) -> str | None:
        return _restated(self.id, self.source_entry_ids)

    @classmethod
    def of(cls, entry: MemoryEntry) -> EntryBrief:
        return cls(entry.id, entry.content, entry.valid_from, entry.source_entry_ids)
