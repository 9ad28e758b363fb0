"""Storage port: the source of truth for entries, their vectors, sessions, audit and jobs.

Split into small protocols by concern so a reader sees each contract at once; an adapter
implements :class:`Storage`, their union. Invariants (checked by
``contract_tests.storage``):

- ``write`` with a key atomically archives the active entry holding that key in the same
  partition (reason ``superseded``, both links set, ``expired_at`` set) and inserts the
  new one: at most one active entry per (partition, key), even under concurrent writers;
- reads never return archived entries unless the filter asks, and never entries outside
  ``filter.partitions``;
- ``lexical_search`` scores are higher-is-better; FTS rows follow entries exactly
  (written, archived, deleted with them);
- ``write_many`` is atomic: all or none of the batch is visible, also after a crash;
- hard delete removes the entry, its tags, its FTS row and its vector.

One optional method, looked up with ``getattr`` (an adapter without it is read with
``get_many``): ``get_briefs(entry_ids) -> list[EntryBrief]``, the id, content, event time
and source ids of the entries that exist, in the order of ``entry_ids``. Search reads its
rerank candidates through it; an adapter that can read four columns more cheaply than a
whole entry should offer it (the contract suite checks it agrees with ``get_many``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import attrs

from tulving.domain.entry import MemoryEntry
from tulving.domain.query import EntryFilter, ScoredId
from tulving.domain.records import AuditDraft, AuditRecord, JobRecord, SessionRecord
from tulving.domain.types import ArchiveReason
from tulving.ports.embedder import Vectors


@attrs.frozen
class StorageCapabilities:
    """What an adapter can do; contract tests adapt or skip with a reason, never silently."""

    persistent: bool = True
    multi_process_writers: bool = False
    #: The vectors live in the same engine and a native vector adapter can index them.
    native_vectors: bool = False
    #: Reads from several threads run at the same time (not one after another behind a
    #: lock); a read from a thread other than one with an open transaction sees the last
    #: committed state. Hybrid search then runs its lexical query beside the vector query.
    concurrent_reads: bool = False
    #: Everything the adapter writes to disk is encrypted with the Memory's key
    #: (``Memory(..., encryption=...)``); a Memory given a key refuses an adapter without it.
    encrypted_at_rest: bool = False


@attrs.frozen
class WriteOutcome:
    entry: MemoryEntry
    superseded: MemoryEntry | None = None


@attrs.frozen
class Archival:
    """One archive request: ``superseded_by`` links the replacement when there is one."""

    entry_id: str
    reason: ArchiveReason
    at: datetime
    superseded_by: str | None = None


class EntryStore(Protocol):
    def write(self, entry: MemoryEntry, embedding: Vectors | None = None) -> WriteOutcome:
        """Insert ``entry`` (superseding its key, see module doc) and its vector."""
        ...

    def write_many(
        self, items: Sequence[tuple[MemoryEntry, Vectors | None]]
    ) -> list[WriteOutcome]:
        """Atomic batch of ``write``; entries later in the batch may supersede earlier ones."""
        ...

    def replace(self, entry: MemoryEntry) -> None:
        """Persist new field values of an existing entry (same id); FTS and tags follow."""
        ...

    def get(self, entry_id: str) -> MemoryEntry | None:
        """The entry with this id, active or archived, regardless of partition.

        Visibility is decided by the caller, which must raise ScopeError rather than
        pretend an invisible entry does not exist.
        """
        ...

    def get_many(self, entry_ids: Sequence[str]) -> list[MemoryEntry]:
        """Entries for the ids that exist, in the order of ``entry_ids``."""
        ...

    def active_by_key(self, partitions: Sequence[str], key: str) -> MemoryEntry | None:
        """The active entry holding ``key`` in the first partition (in order) that has one."""
        ...

    def query(
        self,
        flt: EntryFilter,
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[MemoryEntry]:
        """Entries matching ``flt`` ordered by creation time (id order)."""
        ...

    def count(self, flt: EntryFilter) -> int: ...

    def ids_matching(self, flt: EntryFilter) -> set[str]:
        """Ids matching ``flt`` (cheap allow-lists for filtered vector search)."""
        ...

    def archive(self, archivals: Sequence[Archival]) -> int:
        """Archive active entries; already-archived ones are left alone. Returns count changed."""
        ...

    def unarchive(self, entry_ids: Sequence[str], at: datetime) -> int:
        """Bring archived entries back (rollback of a rollback); key conflicts raise."""
        ...

    def delete(self, entry_ids: Sequence[str]) -> int:
        """Hard delete entries with their tags, FTS rows and vectors. Returns count deleted."""
        ...

    def touch(self, entry_ids: Sequence[str], at: datetime) -> None:
        """Record one access for each id: ``access_count += 1``, ``last_accessed_at = at``.

        Batched in one statement/transaction; never deadlocks against other touches.
        """
        ...

    def lexical_search(self, match: Sequence[str], flt: EntryFilter, limit: int) -> list[ScoredId]:
        """Entries containing any of the normalised ``match`` terms, best first.

        ``match`` holds plain words (already lower-cased and stop-word filtered by the
        caller); the adapter quotes them, ORs them and ranks by its own relevance
        (bm25 in SQLite FTS5, ts_rank in PostgreSQL), higher-is-better.
        """
        ...

    def adjacent(self, entry_ids: Sequence[str], flt: EntryFilter) -> dict[str, tuple[str, ...]]:
        """For each id, the entries written just before and just after it (id order) that
        share its event time (``valid_from``) and pass ``flt``: at most two ids each.

        Turns of one conversation or steps of one task stored together answer each other;
        search uses this to bring a strong hit's neighbours along. Ids not found are left
        out of the result. Must cost a bounded amount per id however large the store (an
        index on ``(valid_from, id)``), never a scan of everything with that time.
        """
        ...

    def tag_counts(self, flt: EntryFilter) -> dict[str, int]: ...


class VectorStore(Protocol):
    def vectors_for(self, entry_ids: Sequence[str]) -> dict[str, Vectors]: ...

    def iter_vectors(self, flt: EntryFilter, batch: int = 1000) -> Iterator[tuple[str, Vectors]]:
        """(id, vector) of matching entries that have a vector, in id order."""
        ...

    def put_vectors(self, items: Sequence[tuple[str, Vectors]]) -> None:
        """Set vectors of existing entries (re-embedding after a model change)."""
        ...

    def missing_vectors(self, flt: EntryFilter, limit: int) -> list[MemoryEntry]:
        """Matching entries with no stored vector."""
        ...

    def clear_vectors(self) -> None:
        """Drop every stored vector (before re-embedding into a new model's space)."""
        ...


class MetaStore(Protocol):
    def get_meta(self, name: str) -> str | None: ...

    def set_meta(self, name: str, value: str) -> None: ...


class SessionStore(Protocol):
    def put_session(self, session: SessionRecord) -> None:
        """Insert or replace a session by id."""
        ...

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def open_sessions(self, agent_id: str, tenant: str) -> list[SessionRecord]: ...


class AuditLog(Protocol):
    def append_audit(self, drafts: Sequence[AuditDraft]) -> list[AuditRecord]:
        """Append records, each chained to the previous record of its tenant, atomically."""
        ...

    def audit_records(
        self, tenant: str | None = None, *, entry_id: str | None = None
    ) -> list[AuditRecord]:
        """Records in append order, of one tenant or all; with ``entry_id``, only the
        records about that entry (the inspector's audit trail of one memory)."""
        ...


class JobQueue(Protocol):
    def enqueue(self, job: JobRecord) -> JobRecord:
        """Persist a job; with an idempotency key already queued, return the existing one."""
        ...

    def pending_jobs(self, kind: str | None = None) -> list[JobRecord]: ...

    def finish_job(self, job_id: str, *, error: str | None = None) -> None: ...


@runtime_checkable
class Storage(EntryStore, VectorStore, MetaStore, SessionStore, AuditLog, JobQueue, Protocol):
    """A complete storage adapter."""

    name: str
    capabilities: StorageCapabilities
    #: Where the data lives (a file path, ``:memory:`` or a URL without credentials).
    location: str

    def open(self) -> None:
        """Connect and run pending migrations; idempotent."""
        ...

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """A transaction; nested calls join the outer one."""
        ...

    def stats(self) -> Mapping[str, Any]:
        """Engine figures (size on disk, row counts) for ``Memory.stats()`` and ``doctor``."""
        ...

    def maintenance(self, action: str) -> Mapping[str, Any]:
        """Engine upkeep: ``"vacuum"`` (reclaim space, also scrubbing deleted bytes),
        ``"checkpoint"``, ``"integrity"``. Unknown actions raise ConfigError."""
        ...


@runtime_checkable
class VectorChangeLog(Protocol):
    """Optional (looked up with ``isinstance``/``getattr``): a log of changes to what the
    vector index must hold, so a persisted index cache, or a reader in another process,
    catches up from the position it was saved at instead of reading every stored vector.

    Invariants (checked by ``contract_tests.storage`` for adapters that offer it):

    - every change to an entry's presence in the index set (a vector written, replaced or
      deleted; an entry with a vector archived, brought back or deleted) is logged in the
      same transaction, at a position greater than every committed one before it;
    - ``vector_changes(after)`` names each entry changed after ``after`` once (the reader
      looks at its current state) with the position that brings a reader up to date, or
      returns None once the log was trimmed past ``after`` (the reader reconciles in full);
    - a rolled-back transaction logs nothing.
    """

    def vector_log_position(self) -> int:
        """The newest logged position (0: nothing logged yet); never decreases."""
        ...

    def vector_changes(self, after: int, limit: int | None = None
                       ) -> tuple[list[str], int] | None: ...

    def trim_vector_log(self, upto: int) -> None:
        """Forget the changes up to ``upto`` (a cache saved there no longer needs them)."""
        ...


def iter_batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
