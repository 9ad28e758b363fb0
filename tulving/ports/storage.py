"""Storage port: the source of truth for entries, their vectors, sessions, audit and jobs.

Split into small protocols by concern so a reader sees each contract at once; an adapter
implements ``Storage``, their union. Invariants (checked by
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

Optional capabilities are declared, never probed: each is a small ``runtime_checkable``
protocol below that an adapter implements when it can, and the contract suite checks it
for every adapter that does (``contract_tests.storage``), skipping with the capability's
name for one that does not: ``BriefReader`` (search reads its rerank candidates as four
columns), ``ReadOnlyOpen`` (opened beside a writer in another process),
``UnlockedOpen`` (opened beside its writer for a row or two), ``EncryptionChange`` (the
store re-written under another key), ``VectorChangeLog``, ``SyncLog``,
``EnrichmentTasks``, ``StrongVectors`` (the strong tier's vectors, looked up by id),
``EntryCensus``, ``ReadTransactions``, ``TokenSessions`` and ``WriteMarks``. What every adapter has, and a capability it may lack as a flag, is in
``StorageCapabilities``.

An adapter may implement the protocols structurally, or subclass
:class:`tulving.ports.storage_base.StorageBase`, which asks for a core of 22 methods and
derives every other one of ``Storage`` from them (the three built-in stores subclass
it). The logic every adapter shares (the sync log's rules, batching, the two sides of a
conflict link) is in ``tulving.domain.sync_records`` and
``tulving.domain.storage_helpers`` (importing those names from here is deprecated).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from tulving.domain.encryption_key import EncryptionKey
from tulving.domain.enrichment import TaskBacklog, TaskFailure
from tulving.domain.entry import EntryBrief, MemoryEntry
from tulving.domain.query import EntryFilter, ScoredId
from tulving.domain.records import (
    AuditDraft,
    AuditRecord,
    JobRecord,
    SessionRecord,
    TokenRecord,
)
from tulving.domain.types import ArchiveReason
from tulving.ports.embedder import Vectors

if TYPE_CHECKING:
    from tulving.domain.sync_records import SyncDelta

#: Names this module re-exported from the domain; importing one from here still works for
#: a release, with a DeprecationWarning naming where it lives.
_MOVED = {
    **dict.fromkeys(("conflict_sides", "iter_batches"), "tulving.domain.storage_helpers"),
    **dict.fromkeys(("DELTA_MERGED", "DELTA_PENDING", "DELTA_QUARANTINED", "DELTA_STATES",
                     "DELTA_STORED", "DEVICE_PATTERN", "SyncDelta", "adopted_watermark",
                     "check_sync_device", "check_sync_state", "checked_adoption"),
                    "tulving.domain.sync_records"),
}


def __getattr__(name: str) -> Any:
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(f"{__name__}.{name} is deprecated: import it from {home} (the name "
                  "goes from here in the next release)", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(home), name)


@attrs.frozen
class StorageCapabilities:
    """What an adapter can do; contract tests adapt or skip with a reason, never silently."""

    persistent: bool = True
    multi_process_writers: bool = False
    native_vectors: bool = False
    """The vectors live in the same engine and a native vector adapter can index them."""
    concurrent_reads: bool = False
    """Reads from several threads run at the same time (not one after another behind a
    lock); a read from a thread other than one with an open transaction sees the last
    committed state. Hybrid search then runs its lexical query beside the vector query."""
    encrypted_at_rest: bool = False
    """Everything the adapter writes to disk is encrypted with the Memory's key
    (``Memory(..., encryption=...)``); a Memory given a key refuses an adapter without it."""


@attrs.frozen
class WriteOutcome:
    """What one ``write`` did: the entry as stored, the entry it superseded (archived
    with reason ``superseded`` and linked both ways) when its key was already held, and
    the write-time decision that made it so (``add``, ``reinforce``, ``update``,
    ``invalidate``, ``noop``, ``conflict``; None where no plan decided: an adapter's own
    write)."""

    entry: MemoryEntry
    superseded: MemoryEntry | None = None
    decision: str | None = None


@attrs.frozen
class Archival:
    """One archive request: ``superseded_by`` links the replacement when there is one."""

    entry_id: str
    reason: ArchiveReason
    at: datetime
    superseded_by: str | None = None


class EntryStore(Protocol):
    """Entries: writes with supersede by key, reads by id, key and filter, archival and
    deletion, full-text search and access statistics."""

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

    def count(self, flt: EntryFilter) -> int:
        """How many entries match ``flt`` (the same entries ``query`` would return)."""
        ...

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

    def tag_counts(self, flt: EntryFilter) -> dict[str, int]:
        """Each tag of the entries matching ``flt`` with how many of them carry it."""
        ...


class VectorStore(Protocol):
    """The stored vectors: the source of truth any vector index is rebuilt from."""

    def vectors_for(self, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vector of each id that has one (ids without a vector are left out)."""
        ...

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
    """Named values about the store itself (the embedding model and its dimension, how
    the vectors were built), read at startup to refuse mixing vector spaces."""

    def get_meta(self, name: str) -> str | None:
        """The value stored under ``name``, or None if there is none."""
        ...

    def set_meta(self, name: str, value: str) -> None:
        """Store ``value`` under ``name``, replacing what was there."""
        ...


class SessionStore(Protocol):
    """Sessions: an agent's explicit and implicit working sessions, per tenant."""

    def put_session(self, session: SessionRecord) -> None:
        """Insert or replace a session by id."""
        ...

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The session with this id, ended or not, or None."""
        ...

    def open_sessions(self, agent_id: str, tenant: str) -> list[SessionRecord]:
        """This agent's sessions in this tenant that have not ended, oldest first."""
        ...


class AuditLog(Protocol):
    """The audit trail: content-free records, hash-chained per tenant."""

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
    """Background work that must survive a crash (``remember(..., wait=False)``)."""

    def enqueue(self, job: JobRecord) -> JobRecord:
        """Persist a job; with an idempotency key already queued, return the existing one."""
        ...

    def pending_jobs(self, kind: str | None = None) -> list[JobRecord]:
        """Jobs not finished yet (of one ``kind``, or all), oldest first."""
        ...

    def finish_job(self, job_id: str, *, error: str | None = None) -> None:
        """Mark a job done, or failed with ``error``; an unknown id is a no-op."""
        ...


@runtime_checkable
class SyncLog(Protocol):
    """The server's side of sync, kept in the store so every replica over one database
    sees one log (``tulving.application.portability.sync_service`` drives it).

    Per tenant: an append-only log of deltas with sequence numbers 1, 2, 3, ... assigned
    in the database (concurrent appends get distinct numbers, visible in number order:
    a reader never sees delta n+1 before delta n); the merge watermark (every delta at or
    below it is settled: merged, stored or quarantined); one merger at a time
    (``sync_merger``). Invariants (checked by ``contract_tests.sync_log``):

    - ``sync_append`` is idempotent per (tenant, device, delta id): the same bytes pushed
      again by one device return the first delta and ``False``;
    - a device name that is not a full match of ``DEVICE_PATTERN`` is a ValidationError
      and nothing is written;
    - an append or a settle inside a transaction that rolls back leaves no trace;
    - tenants never see each other's deltas, numbers or watermarks.
    """

    def sync_append(self, tenant: str, device: str, data: bytes, *, e2e: bool,
                    at: datetime) -> tuple[SyncDelta, bool]:
        """Append ``data`` as the tenant's next delta (state ``pending``, or ``stored``
        when ``e2e``), or return the delta this device already pushed with these bytes
        and False."""
        ...

    def sync_find(self, tenant: str, device: str, delta_id: str) -> SyncDelta | None:
        """The delta this device pushed with this id (sha256 of the bytes), if any."""
        ...

    def sync_deltas(self, tenant: str, after: int, limit: int, *, upto: int | None = None,
                    states: Sequence[str] | None = None,
                    device: str | None = None) -> list[SyncDelta]:
        """Deltas with ``after < seq <= upto`` (no upper bound when None), oldest first,
        at most ``limit``; only those in ``states`` and of ``device`` when given."""
        ...

    def sync_read(self, tenant: str, seq: int) -> bytes | None:
        """The bytes of delta ``seq`` of this tenant (None when it has no such delta)."""
        ...

    def sync_last(self, tenant: str) -> int:
        """The highest sequence number of the tenant's log (0 when empty)."""
        ...

    def sync_watermark(self, tenant: str) -> int:
        """The merge watermark of the tenant (0 when nothing is settled)."""
        ...

    def sync_merger(self, tenant: str) -> AbstractContextManager[int]:
        """Be the tenant's only merger for the ``with`` block (across transactions) and
        get the watermark as it stands once the claim is held. Another claim of the same
        tenant (another thread, process or machine) waits until the block ends.
        PostgreSQL holds a session advisory lock on a connection of its own; a store with
        one writer process (SQLite, in memory) holds a lock of that process."""
        ...

    def sync_settle(self, tenant: str, seq: int, state: str,
                    reason: str | None = None) -> None:
        """Record the outcome of delta ``seq`` (the first after the watermark; anything
        else is a StorageError) and move the watermark to it, atomically. Callers hold
        the tenant's ``sync_merger`` claim."""
        ...

    def sync_adopt(self, tenant: str, deltas: Sequence[SyncDelta],
                   data: Sequence[bytes]) -> int:
        """Take over an older log of the tenant (files of a server before the log moved
        into the store) with its sequence numbers, states and watermark (the highest
        settled number, all settled ones first), so devices keep their watermarks.
        Only into an empty tenant log: returns how many deltas were adopted, 0 when the
        tenant already has a log."""
        ...


@attrs.frozen
class Supersession:
    """One targeted supersede of an existing entry by a new one (see ``WriteOrder``):
    only the fields a supersede changes, never a whole row from an older read.
    ``signature`` is the entry's signature over its new ``valid_until`` (None: unsigned)."""

    entry_id: str
    superseded_by: str
    at: datetime
    valid_until: datetime
    signature: str | None = None


class WriteOrder(Protocol):
    """How writers of many processes take locks in one order and change only what they
    mean to change (DESIGN.md, "The seams").

    A writing transaction first calls ``lock_tenant_writes``; the entry rows it then
    changes are locked in id order by one statement per call. A link is an update of the
    link (``link_conflicts``, ``supersede_entries``), never a row rewritten from a read
    made before the transaction.
    """

    def lock_tenant_writes(self, tenant: str) -> None:
        """Inside a transaction: wait until no other transaction writes ``tenant`` and
        hold that until this one ends (PostgreSQL: a transaction-scoped advisory lock,
        the one that chains the tenant's audit log; SQLite and in-memory stores: their
        transactions are serial already). Called before any other lock is taken."""
        ...

    def link_conflicts(self, pairs: Sequence[tuple[str, str]], at: datetime) -> int:
        """For each ``(a, b)``: add ``b`` to ``a``'s ``conflict_ids`` and ``a`` to ``b``'s,
        unless present (``updated_at = at`` where something was added), both sides in one
        transaction with the rows locked in id order. Ids that do not exist are skipped
        with their pair. Returns how many rows changed."""
        ...

    def supersede_entries(self, items: Sequence[Supersession]) -> list[str]:
        """Archive each entry that is still active (reason ``superseded``, ``superseded_by``,
        ``valid_until``, ``expired_at``/``updated_at`` = ``at``, the new signature), rows
        locked in id order, in one transaction. Returns the ids changed: an entry another
        writer archived first is left alone and not returned."""
        ...


class SessionClaims(Protocol):
    """Sessions as every process of an agent sees them: at most one open implicit and one
    open explicit session per (agent, tenant), claimed and ended atomically in the store."""

    def open_session(self, session: SessionRecord) -> SessionRecord:
        """Insert ``session`` (open) unless its (agent, tenant) already has an open session
        of the same kind (``implicit`` or not): then write nothing and return that one. Of
        concurrent callers on any number of processes exactly one inserts."""
        ...

    def end_session(self, session_id: str, at: datetime, reason: str) -> SessionRecord | None:
        """End the session if it is still open, in one statement, and return it ended; None
        when it was already ended (or does not exist): of concurrent enders one wins."""
        ...

    def set_session_summary(self, session_id: str, summary_id: str | None) -> None: ...

    def note_session_activity(self, session_id: str, at: datetime) -> None:
        """``last_activity_at = max(last_activity_at, at)`` of an open session, best effort:
        never waits for a lock another transaction holds (bookkeeping, not a decision)."""
        ...


class JobClaims(Protocol):
    """Durable jobs run once whichever process runs them."""

    def claim_job(self, job_id: str, owner: str, until: datetime, now: datetime) -> bool:
        """Take a lease on a pending job for ``owner`` until ``until``, in one statement,
        when it is unclaimed, already ``owner``'s, or its lease ended before ``now``. False
        when it is finished or another owner's lease is live. A lease only keeps workers
        from preparing a job twice; ``take_job`` decides who writes it."""
        ...

    def take_job(self, job_id: str) -> JobRecord | None:
        """Inside the caller's transaction: lock the job until the transaction ends and
        return it if it is still pending; None when it is finished or missing. A second
        transaction taking the same job waits for the first, then sees it finished: a
        job's entries and its completion commit together, once."""
        ...

    def get_job(self, job_id: str) -> JobRecord | None: ...


class TokenStore(Protocol):
    """Bearer tokens of the HTTP doors as rows: created and revoked atomically, so any
    number of processes issue and revoke them at once and every replica sees the same."""

    def add_token(self, token: TokenRecord) -> bool:
        """Insert a live token; False (nothing written) when a live token has its name or
        any token has its id. Of concurrent adds of one name exactly one succeeds."""
        ...

    def get_token(self, token_id: str) -> TokenRecord | None:
        """The live (not revoked) token with this id."""
        ...

    def live_tokens(self) -> list[TokenRecord]:
        """Every live token, oldest first."""
        ...

    def revoke_token(self, id_or_name: str, at: datetime) -> TokenRecord | None:
        """Revoke the live token with this id or name in one statement and return it
        (revoked); None when there is none. The row stays, so the id is never reused."""
        ...


class SharedState(WriteOrder, SessionClaims, JobClaims, TokenStore, Protocol):
    """What every process over one store must agree on (DESIGN.md, "The seams")."""


@runtime_checkable
class Storage(EntryStore, VectorStore, MetaStore, SessionStore, AuditLog, JobQueue,
              SharedState, Protocol):
    """A complete storage adapter."""

    name: str
    capabilities: StorageCapabilities
    location: str
    """Where the data lives (a file path, ``:memory:`` or a URL without credentials)."""

    def open(self) -> None:
        """Connect and run pending migrations; idempotent."""
        ...

    def close(self) -> None:
        """Release connections and files; the store is persisted as it stands."""
        ...

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
class BriefReader(Protocol):
    """Optional: read what search's rerank needs of its candidates (id, content, event
    time, source ids) more cheaply than whole entries. An adapter without it is read
    with ``get_many`` (the SQLite store's four columns took 1 ms off a hybrid search)."""

    def get_briefs(self, entry_ids: Sequence[str]) -> list[EntryBrief]:
        """The briefs of the entries that exist, in the order of ``entry_ids``; what
        ``get_many`` would answer, cut to those fields."""
        ...


@runtime_checkable
class ReadOnlyOpen(Protocol):
    """Optional: an adapter that can open beside a writer in another process and write
    nothing (``AdapterContext.read_only``; ``Memory(..., read_only=True)``). An adapter
    without it is refused for a read-only Memory.

    Invariants: an instance opened read-only takes no writer lock, runs no migration (a
    store that needs one is refused with ``ReadOnlyError``), sees what the writer
    commits, and raises ``ReadOnlyError`` from every write and from ``transaction()``.
    """

    read_only: bool
    """Whether this instance was opened read-only."""


@runtime_checkable
class UnlockedOpen(Protocol):
    """Optional: a single-writer store that a door may open beside the process holding
    its writer lock, to write a row or two that the engine itself serialises against that
    process's transactions (the token commands beside a running server: one row of the
    tokens table, ordered by SQLite's busy timeout). Without it, a store whose lock is
    held cannot be opened by such a door; a store with several writers needs no lock.

    Invariants: ``open_unlocked()`` opens the store as ``open()`` does except that it
    takes no writer lock (the composition first tries ``open()``, so a store that needs
    a migration is migrated under the lock when nobody holds it); what is written
    through it is seen by the lock holder at its next read.
    """

    def open_unlocked(self) -> None: ...


@runtime_checkable
class EncryptionChange(Protocol):
    """Optional: an adapter whose files can be re-written under another key (``tulving
    encrypt``, ``rekey``, ``decrypt``)."""

    def change_encryption(self, new: EncryptionKey | None,
                          before_switch: Callable[[], None] | None = None) -> object:
        """Re-write the closed store from its own key to ``new`` (None: plain), crash-safe:
        a crash leaves the old store or the new one; ``before_switch()`` runs just before
        the new file replaces the old. Refused while the store is open."""
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


@runtime_checkable
class EnrichmentTasks(Protocol):
    """Optional: durable enrichment tasks, the work derived from a write that a background
    worker runs after it returns (docs/architecture.md, "Enrichment"; the rules are in
    ``tulving.domain.enrichment``). Without it a Memory keeps its tasks in process memory.

    A task is ``(kind, target)``, unique. ``add_tasks`` joins the caller's transaction,
    so a task exists if and only if the write that queued it committed. ``claim_tasks``
    is one atomic statement (threads or processes racing for tasks get disjoint sets);
    ``finish_tasks`` runs inside the transaction that writes the task's result, and the
    result is written for exactly the targets it returns."""

    def add_tasks(self, kind: str, targets: Sequence[str], at: datetime) -> int:
        """Queue ``kind`` for each target not queued yet; returns how many were added."""
        ...

    def claim_tasks(self, kind: str, owner: str, now: datetime, until: datetime,
                    limit: int) -> list[str]:
        """Lease up to ``limit`` tasks of ``kind`` (not failed, lease free or lapsed before
        ``now``) to ``owner`` until ``until``, oldest first; their targets."""
        ...

    def finish_tasks(self, kind: str, targets: Sequence[str], owner: str) -> list[str]:
        """Delete the tasks of ``targets`` that ``owner`` still holds; those deleted."""
        ...

    def release_tasks(self, kind: str, targets: Sequence[str], owner: str, at: datetime,
                      *, error: str | None = None, give_up_after: int = 3) -> None:
        """Give ``owner``'s leases back. With ``error`` an attempt is counted, and a task
        at ``give_up_after`` attempts is parked as failed (at ``at``) with the error."""
        ...

    def clear_leases(self) -> int:
        """Give back every lease, whoever holds it; how many. For a store with one writing
        process at a time (``capabilities.multi_process_writers`` False), whose writer
        calls it when it opens: any lease then is a dead or closed process's."""
        ...

    def task_backlog(self, now: datetime) -> Mapping[str, TaskBacklog]:
        """Pending, running (lease live at ``now``) and failed tasks per kind that has any."""
        ...

    def failed_tasks(self, limit: int = 100) -> list[TaskFailure]:
        """The tasks parked as failed, oldest first."""
        ...

    def retry_failed_tasks(self, kind: str | None = None) -> int:
        """Put failed tasks (of ``kind``, or all) back in the queue with no attempts;
        returns how many."""
        ...


@runtime_checkable
class ReadTransactions(Protocol):
    """Optional (looked up with ``isinstance``): the reads of one request in one
    transaction of the store, instead of one per statement (a server over PostgreSQL
    pays for each transaction in round trips and in the database's CPU).

    Inside ``reading()``, storage calls made on this thread read in one transaction on
    one connection, begun at the first read; a ``transaction()`` begun inside it ends
    the read transaction first and runs as usual (a write never joins a read), and
    reads after it begin another. Each statement reads what was committed when it began,
    as outside the scope, so nothing is decided from an older state than without it.
    Nested scopes (and scopes inside a transaction) join the outer one.
    """

    def reading(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class TokenSessions(Protocol):
    """Optional: the token lookup every request of the HTTP doors makes anyway, answering
    also with the open sessions of the agent the request acts as, so the session lookup
    each call needs costs no read of its own."""

    def token_with_sessions(self, token_id: str, agent_id: str
                            ) -> tuple[TokenRecord | None, list[SessionRecord]]:
        """The live token ``token_id`` (None when missing or revoked, then no sessions) and
        the open sessions of its bound agent, else of ``agent_id``, in its tenant (as
        ``Identity(agent, token.user_id, token.workspace_id).tenant`` names it), oldest
        first: what ``get_token`` and ``open_sessions`` answer, read together."""
        ...


@attrs.frozen
class PlanCheck:
    """What a write planned before its tenant's write lock read (``WriteMarks``)."""

    tenant: str
    mark: int
    partitions: tuple[str, ...]
    candidates: tuple[str, ...]
    """Ids of the existing entries the plan read (each once)."""
    hashes: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    vectors: tuple[Vectors, ...] = ()
    near: float = 1.0


@attrs.frozen
class PlannedCommit:
    """A planned write as committed: its audit records, and how long the tenant's write
    lock was held (from its taking to the last statement before the commit, by the
    store's clock)."""

    records: list[AuditRecord]
    held: float


@runtime_checkable
class WriteMarks(Protocol):
    """Optional: what lets a writer plan its decisions (dedup, supersede, conflicts)
    before it takes its tenant's write lock and check the plan under it, so the lock is
    held for the check and the commit only (stores whose writers of one tenant may run
    in many processes: PostgreSQL).

    Invariants: ``lock_tenant_writes`` counts the tenant's writing transactions (in the
    order they commit: the count is taken under the lock); every entry a writing
    transaction inserts or changes is marked with its count; ``write_mark`` is the count
    of the last committed one. A plan read after ``write_mark`` returned ``m`` misses
    nothing that ``written_since(m, ...)`` does not return under the lock.
    """

    def write_mark(self, tenant: str) -> int:
        """How many writing transactions of ``tenant`` have committed (0: none)."""
        ...

    def plans_ahead(self) -> bool:
        """Whether a write made now on this thread may be planned before the lock: False
        inside a transaction (the write joins it and decides under the lock it holds)."""
        ...

    def commit_planned(self, check: PlanCheck, supersede: Sequence[Supersession],
                       flags: Mapping[str, Sequence[str]],
                       inserts: Sequence[tuple[MemoryEntry, Vectors | None]],
                       audit: Sequence[AuditDraft], at: datetime,
                       tasks: Sequence[tuple[str, str]] = ()) -> PlannedCommit | None:
        """A write planned before the lock, committed in one transaction (PostgreSQL: one
        round trip): the tenant's write lock (counted as ``lock_tenant_writes`` does),
        ``check``, then the supersedes, the conflict lists of existing entries set to
        ``flags`` (``updated_at = at``), the new entries with their vectors, the audit
        records, and the enrichment ``tasks`` (kind, target) the write queues (as
        ``EnrichmentTasks.add_tasks`` at ``at``). None, with nothing written, when the check fails: a candidate the plan
        read changed or is gone since ``check.mark``, or an entry of ``check.partitions``
        written since has one of ``check.hashes``, states one of ``check.facts``, or lies
        within cosine ``check.near`` of one of ``check.vectors``. Also None, with
        nothing written, inside a transaction (``plans_ahead`` is False there)."""
        ...

    def written_since(self, mark: int, partitions: Sequence[str], ids: Sequence[str] = ()
                      ) -> tuple[list[MemoryEntry], list[tuple[MemoryEntry, Vectors | None]]]:
        """Read together (one read): the entries ``ids`` as they are now (missing ones
        left out), and every active entry of ``partitions`` that a writing transaction
        counted after ``mark`` inserted or changed, with its stored vector (None without
        one). Both in no particular order; an entry may be in both."""
        ...


@runtime_checkable
class EntryCensus(Protocol):
    """Optional (looked up with ``isinstance``): how many active entries each tenant
    holds, in one grouped count. The memory server's metrics read it when Prometheus
    scrapes (``tulving_tenant_entries``), at most once a minute by default. Checked by
    ``contract_tests.storage`` for adapters that offer it."""

    def active_entries_by_tenant(self) -> Mapping[str, int]:
        """Tenant (``Identity.tenant``: user and workspace ids) -> its active entries;
        tenants without any are left out."""
        ...


@runtime_checkable
class StrongVectors(Protocol):
    """Optional: the strong tier's vectors, stored beside the fast ones (a second vector
    table). The fast embedder's vectors find the candidates over the whole store; a
    stronger encoder's vectors re-score the best few of them, so they are looked up by id
    only and never indexed. Each is stored under the ``model`` that made it (another
    strong model's vectors are not read) and with the entry's content hash at the time it
    was written: a vector whose entry's content changed since is not returned.

    Invariants (checked by ``contract_tests.storage`` for adapters that offer it):

    - ``put_strong_vectors`` stores one vector per (entry, model), replacing an older
      one; items naming an entry that does not exist (deleted meanwhile) are skipped, so a
      background job finishing after an erasure writes nothing back;
    - ``strong_vectors_for`` returns float32 rows of the stored values (stored at half
      precision: the cosines they give differ from float32 by under 1e-3) for the ids
      that have a current one;
    - ``lacking_strong_vectors`` lists active entries without a current vector of
      ``model``, oldest id first (the backfill of a store opened with the tier for the
      first time);
    - a hard delete removes an entry's strong vectors with it; ``clear_strong_vectors``
      removes every vector of ``model``.
    """

    def strong_vectors_for(self, model: str, entry_ids: Sequence[str]) -> dict[str, Vectors]:
        ...

    def put_strong_vectors(self, model: str, items: Sequence[tuple[str, Vectors]]) -> int:
        """Store the vectors; return how many were written (entries that exist)."""
        ...

    def lacking_strong_vectors(self, model: str, limit: int) -> list[str]: ...

    def count_strong_vectors(self, model: str) -> int: ...

    def clear_strong_vectors(self, model: str) -> None: ...
