"""``AsyncMemory``: the ``Memory`` API for async code (agent frameworks call memory from
an event loop).

Every call runs the blocking ``Memory`` method on a worker thread (anyio, so asyncio and
trio both work): the event loop never waits on SQLite, the embedding model or an LLM.
Reads run in parallel up to ``max_concurrency``; writes queue on one async lock, as the
store takes one writer at a time anyway. A write, once started, is not abandoned when its
task is cancelled: the cancellation takes effect when the write's one transaction has
committed or rolled back, so a cancelled ``remember`` leaves all of its batch or none.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import IO, Any, Literal, TypeVar, overload

import anyio
import anyio.to_thread

from tulving.application.agent_memory.jobs import RememberJob
from tulving.application.governance.audit import AuditCheck
from tulving.application.governance.erasure import ErasureReport
from tulving.application.governance.integrity import HealthReport, IntegrityReport
from tulving.application.governance.retention import (
    PurgeReport,
    RetentionReport,
    RollbackReport,
)
from tulving.application.memory import Memory
from tulving.application.portability.bundle_format import DEFAULT_MAX_BYTES
from tulving.application.portability.exporter import ExportReport
from tulving.application.portability.formats.translation import (
    DEFAULT_MAX_BYTES as FOREIGN_MAX_BYTES,
)
from tulving.application.portability.importer import ImportReport
from tulving.application.portability.lines_import import LinesReport
from tulving.application.portability.sync import SyncRemote, SyncReport
from tulving.application.retrieval import lookup
from tulving.application.upkeep.eviction import EvictionReport
from tulving.application.upkeep.maintenance import (
    InspectReport,
    MaintenancePurge,
    MaintenanceReport,
    ReembedReport,
    ReindexReport,
    VacuumReport,
)
from tulving.domain.curated import CuratedContext
from tulving.domain.enrichment import EnrichmentReport, TaskFailure
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.memory_reports import (
    ConsolidationReport,
    Profile,
    StatsReport,
    StoreReport,
)
from tulving.domain.migration_reports import MigrationExport, MigrationReport
from tulving.domain.query import SearchResult
from tulving.domain.records import AuditRecord, SessionRecord
from tulving.domain.types import MemoryType, Scope

T = TypeVar("T")


class AsyncMemory:
    """``AsyncMemory(path, agent_id=..., **same keywords as Memory)``; use it with
    ``async with`` (or ``await m.startup()`` / ``await m.aclose()``)."""

    def __init__(self, *args: Any, max_concurrency: int = 8, **kwargs: Any) -> None:
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
                or max_concurrency < 1:
            raise ValidationError("max_concurrency must be a positive integer")
        self.memory = Memory(*args, **kwargs)
        self._max_concurrency = max_concurrency
        self._readers = anyio.CapacityLimiter(max_concurrency)
        self._writes = anyio.Lock()

    @classmethod
    def wrapping(cls, memory: Memory, *, max_concurrency: int = 8) -> AsyncMemory:
        """An async face for an existing ``Memory`` (the same store and identity)."""
        self = cls.__new__(cls)
        self.memory = memory
        self._max_concurrency = max_concurrency
        self._readers = anyio.CapacityLimiter(max_concurrency)
        self._writes = anyio.Lock()
        return self

    async def _read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs),
                                              limiter=self._readers)

    async def _write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        async with self._writes:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs),
                                                  limiter=self._readers)

    # lifecycle ---------------------------------------------------------------------------
    async def startup(self) -> AsyncMemory:
        """Open the memory now ([`Memory.startup`][tulving.Memory.startup]) rather than on
        first use."""
        await self._write(self.memory.startup)
        return self

    async def aclose(self) -> None:
        """Close it ([`Memory.close`][tulving.Memory.close]); a cancellation waits for the
        close to finish."""
        with anyio.CancelScope(shield=True):
            await self._write(self.memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return await self.startup()

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def view(self, *, agent_id: str, user_id: str | None = None,
                   workspace_id: str | None = None) -> AsyncMemory:
        """[`Memory.view`][tulving.Memory.view], with an async face of its own (the
        same store; it opens the store first if it is not open yet, on a worker thread)."""
        view = await self._write(self.memory.view, agent_id=agent_id, user_id=user_id,
                                 workspace_id=workspace_id)
        return AsyncMemory.wrapping(view, max_concurrency=self._max_concurrency)

    # every other agent-facing method of Memory, with its parameters (a test holds them
    # equal): writes queue on one lock, reads run beside each other -------------------
    async def flush(self) -> None:
        """[`Memory.flush`][tulving.Memory.flush]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.flush)

    @overload
    async def store(
        self,
        content: str,
        *,
        type: MemoryType | str,
        key: str | None = ...,
        tags: Iterable[str] | None = ...,
        importance: float | None = ...,
        pinned: bool | None = ...,
        metadata: Mapping[str, Any] | None = ...,
        valid_from: datetime | None = ...,
        dedup: bool = ...,
        report: Literal[False] = ...,
        **more: Any,
    ) -> MemoryEntry: ...

    @overload
    async def store(
        self,
        content: str,
        *,
        type: MemoryType | str,
        key: str | None = ...,
        tags: Iterable[str] | None = ...,
        importance: float | None = ...,
        pinned: bool | None = ...,
        metadata: Mapping[str, Any] | None = ...,
        valid_from: datetime | None = ...,
        dedup: bool = ...,
        report: Literal[True],
        **more: Any,
    ) -> StoreReport: ...

    async def store(
        self,
        content: str,
        *,
        type: MemoryType | str,
        key: str | None = None,
        tags: Iterable[str] | None = None,
        importance: float | None = None,
        pinned: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
        valid_from: datetime | None = None,
        dedup: bool = True,
        report: bool = False,
        **more: Any,
    ) -> MemoryEntry | StoreReport:
        """[`Memory.store`][tulving.Memory.store]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(
            self.memory.store,
            content,
            type=type,
            key=key,
            tags=tags,
            importance=importance,
            pinned=pinned,
            metadata=metadata,
            valid_from=valid_from,
            dedup=dedup,
            report=report,
            **more,
        )

    async def store_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryEntry]:
        """[`Memory.store_many`][tulving.Memory.store_many]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.store_many, list(items))

    async def store_lines(
        self,
        lines: Sequence[tuple[int, Mapping[str, Any]]],
        *,
        source: str,
        batch_size: int = 256,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> LinesReport:
        """[`Memory.store_lines`][tulving.Memory.store_lines]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(
            self.memory.store_lines, lines, source=source, batch_size=batch_size, progress=progress
        )

    async def get(
        self, key_or_id: str, *, as_of: datetime | None = None, include_archived: bool = False
    ) -> MemoryEntry:
        """[`Memory.get`][tulving.Memory.get]:
        a read, on a worker thread beside other reads."""
        return await self._read(
            self.memory.get, key_or_id, as_of=as_of, include_archived=include_archived
        )

    async def list_keys(self, prefix: str = "") -> list[str]:
        """[`Memory.list_keys`][tulving.Memory.list_keys]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.list_keys, prefix)

    async def list_entries(
        self,
        limit: int = 100,
        cursor: str | None = None,
        *,
        types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        include_archived: bool = False,
        scope: Scope | str | None = None,
    ) -> lookup.EntryPage:
        """[`Memory.list_entries`][tulving.Memory.list_entries]:
        a read, on a worker thread beside other reads."""
        return await self._read(
            self.memory.list_entries,
            limit,
            cursor,
            types=types,
            tags=tags,
            since=since,
            until=until,
            include_archived=include_archived,
            scope=scope,
        )

    async def history(self, key: str) -> list[MemoryEntry]:
        """[`Memory.history`][tulving.Memory.history]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.history, key)

    async def forget(self, key_or_id: str, *, hard: bool = False) -> MemoryEntry:
        """[`Memory.forget`][tulving.Memory.forget]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.forget, key_or_id, hard=hard)

    async def search(
        self,
        query: str,
        top_k: int = 10,
        *,
        mode: str = "hybrid",
        types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_score: float | None = None,
        as_of: datetime | None = None,
        distinct: bool = True,
    ) -> list[SearchResult]:
        """[`Memory.search`][tulving.Memory.search]:
        a read, on a worker thread beside other reads."""
        return await self._read(
            self.memory.search,
            query,
            top_k,
            mode=mode,
            types=types,
            tags=tags,
            since=since,
            until=until,
            min_score=min_score,
            as_of=as_of,
            distinct=distinct,
        )

    async def curate(
        self,
        query: str | None = None,
        *,
        token_budget: int,
        mode: str | None = None,
        types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        weights: Any = None,
        explain: bool = False,
    ) -> CuratedContext:
        """[`Memory.curate`][tulving.Memory.curate]:
        a read, on a worker thread beside other reads."""
        return await self._read(
            self.memory.curate,
            query,
            token_budget=token_budget,
            mode=mode,
            types=types,
            tags=tags,
            since=since,
            until=until,
            weights=weights,
            explain=explain,
        )

    async def count_tokens(self, text: str) -> int:
        """[`Memory.count_tokens`][tulving.Memory.count_tokens]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.count_tokens, text)

    async def start_session(self, goal: str | None = None) -> SessionRecord:
        """[`Memory.start_session`][tulving.Memory.start_session]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.start_session, goal)

    async def end_session(self) -> SessionRecord | None:
        """[`Memory.end_session`][tulving.Memory.end_session]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.end_session)

    async def shutdown_session(self) -> SessionRecord | None:
        """[`Memory.shutdown_session`][tulving.Memory.shutdown_session]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.shutdown_session)

    @overload
    async def remember(
        self,
        text: str,
        *,
        source_type: str = ...,
        idempotency_key: str | None = ...,
        wait: Literal[True] | None = ...,
        valid_from: datetime | None = ...,
        subject: str | None = ...,
    ) -> list[MemoryEntry]: ...

    @overload
    async def remember(
        self,
        text: str,
        *,
        source_type: str = ...,
        idempotency_key: str | None = ...,
        wait: Literal[False],
        valid_from: datetime | None = ...,
        subject: str | None = ...,
    ) -> RememberJob: ...

    async def remember(
        self,
        text: str,
        *,
        source_type: str = "conversation",
        idempotency_key: str | None = None,
        wait: bool | None = None,
        valid_from: datetime | None = None,
        subject: str | None = None,
    ) -> list[MemoryEntry] | RememberJob:
        """[`Memory.remember`][tulving.Memory.remember]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(
            self.memory.remember,
            text,
            source_type=source_type,
            idempotency_key=idempotency_key,
            wait=wait,
            valid_from=valid_from,
            subject=subject,
        )

    async def run_jobs(self) -> int:
        """[`Memory.run_jobs`][tulving.Memory.run_jobs]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.run_jobs)

    async def pending_jobs(self) -> int:
        """[`Memory.pending_jobs`][tulving.Memory.pending_jobs]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.pending_jobs)

    async def consolidate(
        self,
        *,
        dry_run: bool = True,
        types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
    ) -> ConsolidationReport:
        """[`Memory.consolidate`][tulving.Memory.consolidate]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.consolidate, dry_run=dry_run, types=types, tags=tags)

    async def profile(self, subject: str = "user") -> Profile:
        """[`Memory.profile`][tulving.Memory.profile]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.profile, subject)

    async def record_outcome(self, key_or_id: str, success: bool) -> MemoryEntry:
        """[`Memory.record_outcome`][tulving.Memory.record_outcome]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.record_outcome, key_or_id, success)

    async def procedures(self, query: str, top_k: int = 5) -> list[SearchResult]:
        """[`Memory.procedures`][tulving.Memory.procedures]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.procedures, query, top_k)

    async def working_memory(self, limit: int = 20) -> list[MemoryEntry]:
        """[`Memory.working_memory`][tulving.Memory.working_memory]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.working_memory, limit)

    async def evict(self, threshold: float = 0.05, *, dry_run: bool = False) -> EvictionReport:
        """[`Memory.evict`][tulving.Memory.evict]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.evict, threshold, dry_run=dry_run)

    async def stats(self) -> StatsReport:
        """[`Memory.stats`][tulving.Memory.stats]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.stats)

    async def wait_enriched(
        self, timeout: float | None = None, *, kinds: Iterable[str] | None = None
    ) -> EnrichmentReport:
        """[`Memory.wait_enriched`][tulving.Memory.wait_enriched]:
        on a worker thread (it may run the background work itself), so the event loop goes on."""
        return await self._read(self.memory.wait_enriched, timeout, kinds=kinds)

    async def enrichment_failures(self, limit: int = 100) -> list[TaskFailure]:
        """[`Memory.enrichment_failures`][tulving.Memory.enrichment_failures]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.enrichment_failures, limit)

    async def retry_enrichment(self, kind: str | None = None) -> int:
        """[`Memory.retry_enrichment`][tulving.Memory.retry_enrichment]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.retry_enrichment, kind)

    @overload
    async def maintenance(
        self,
        action: Literal["inspect"],
        *,
        dry_run: bool = ...,
        archived_before: datetime | None = ...,
        force: bool = ...,
    ) -> InspectReport: ...

    @overload
    async def maintenance(
        self,
        action: Literal["purge"],
        *,
        dry_run: bool = ...,
        archived_before: datetime | None = ...,
        force: bool = ...,
    ) -> MaintenancePurge: ...

    @overload
    async def maintenance(
        self,
        action: Literal["vacuum"],
        *,
        dry_run: bool = ...,
        archived_before: datetime | None = ...,
        force: bool = ...,
    ) -> VacuumReport: ...

    @overload
    async def maintenance(
        self,
        action: Literal["reindex"],
        *,
        dry_run: bool = ...,
        archived_before: datetime | None = ...,
        force: bool = ...,
    ) -> ReindexReport: ...

    @overload
    async def maintenance(
        self,
        action: Literal["reembed"],
        *,
        dry_run: bool = ...,
        archived_before: datetime | None = ...,
        force: bool = ...,
    ) -> ReembedReport: ...

    @overload
    async def maintenance(
        self,
        action: str,
        *,
        dry_run: bool = ...,
        archived_before: datetime | None = ...,
        force: bool = ...,
    ) -> MaintenanceReport: ...

    async def maintenance(
        self,
        action: str,
        *,
        dry_run: bool = True,
        archived_before: datetime | None = None,
        force: bool = False,
    ) -> MaintenanceReport:
        """[`Memory.maintenance`][tulving.Memory.maintenance]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(
            self.memory.maintenance,
            action,
            dry_run=dry_run,
            archived_before=archived_before,
            force=force,
        )

    async def export(
        self,
        target: str | os.PathLike[str] | IO[bytes],
        *,
        tags: Sequence[str] | None = None,
        types: Sequence[MemoryType | str] | None = None,
        scope: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        include_archived: bool = True,
        include_embeddings: bool = True,
        redact: bool = False,
        encryption: Any = None,
    ) -> ExportReport:
        """[`Memory.export`][tulving.Memory.export]:
        a read, on a worker thread beside other reads."""
        return await self._read(
            self.memory.export,
            target,
            tags=tags,
            types=types,
            scope=scope,
            since=since,
            until=until,
            include_archived=include_archived,
            include_embeddings=include_embeddings,
            redact=redact,
            encryption=encryption,
        )

    async def import_bundle(
        self,
        source: str | os.PathLike[str] | IO[bytes],
        *,
        reembedding: str = "auto",
        on_conflict: str = "newest",
        dry_run: bool = False,
        remap_identity: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
        encryption: Any = None,
        new_ids: str = "keep",
    ) -> ImportReport:
        """[`Memory.import_bundle`][tulving.Memory.import_bundle]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(
            self.memory.import_bundle,
            source,
            reembedding=reembedding,
            on_conflict=on_conflict,
            dry_run=dry_run,
            remap_identity=remap_identity,
            max_bytes=max_bytes,
            encryption=encryption,
            new_ids=new_ids,
        )

    async def import_from(
        self,
        source: str | os.PathLike[str] | bytes | IO[bytes],
        *,
        format: str,
        dry_run: bool = False,
        remap_identity: bool = False,
        on_conflict: str = "newest",
        max_bytes: int = FOREIGN_MAX_BYTES,
    ) -> MigrationReport:
        """[`Memory.import_from`][tulving.Memory.import_from]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(
            self.memory.import_from,
            source,
            format=format,
            dry_run=dry_run,
            remap_identity=remap_identity,
            on_conflict=on_conflict,
            max_bytes=max_bytes,
        )

    async def export_to(
        self,
        target: str | os.PathLike[str] | IO[bytes],
        *,
        format: str,
        tags: Sequence[str] | None = None,
        types: Sequence[MemoryType | str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        include_archived: bool = True,
        redact: bool = False,
    ) -> MigrationExport:
        """[`Memory.export_to`][tulving.Memory.export_to]:
        a read, on a worker thread beside other reads."""
        return await self._read(
            self.memory.export_to,
            target,
            format=format,
            tags=tags,
            types=types,
            since=since,
            until=until,
            include_archived=include_archived,
            redact=redact,
        )

    async def sync(self, remote: SyncRemote, *, encryption: Any = None) -> SyncReport:
        """[`Memory.sync`][tulving.Memory.sync]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.sync, remote, encryption=encryption)

    async def clear(self, *, scope: str, confirm: bool = False, hard: bool = False) -> int:
        """[`Memory.clear`][tulving.Memory.clear]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.clear, scope=scope, confirm=confirm, hard=hard)

    async def review(self, key_or_id: str, *, approve: bool) -> MemoryEntry:
        """[`Memory.review`][tulving.Memory.review]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.review, key_or_id, approve=approve)

    async def pending_review(self) -> list[MemoryEntry]:
        """[`Memory.pending_review`][tulving.Memory.pending_review]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.pending_review)

    async def correct(self, key_or_id: str, new_content: str, **fields: Any) -> MemoryEntry:
        """[`Memory.correct`][tulving.Memory.correct]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.correct, key_or_id, new_content, **fields)

    async def rollback_to(self, point: str | datetime) -> RollbackReport:
        """[`Memory.rollback_to`][tulving.Memory.rollback_to]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.rollback_to, point)

    async def apply_retention(self, policy: Mapping[str, Any]) -> RetentionReport:
        """[`Memory.apply_retention`][tulving.Memory.apply_retention]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.apply_retention, policy)

    async def purge(
        self, older_than: datetime | None = None, *, force: bool = False, dry_run: bool = False
    ) -> PurgeReport:
        """[`Memory.purge`][tulving.Memory.purge]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(self.memory.purge, older_than, force=force, dry_run=dry_run)

    async def erase(
        self,
        *,
        user_id: str | None = None,
        workspace_id: str | None = None,
        agent_id: str | None = None,
    ) -> ErasureReport:
        """[`Memory.erase`][tulving.Memory.erase]:
        a write, queued behind other writes, on a worker thread."""
        return await self._write(
            self.memory.erase, user_id=user_id, workspace_id=workspace_id, agent_id=agent_id
        )

    async def verify(self) -> IntegrityReport:
        """[`Memory.verify`][tulving.Memory.verify]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.verify)

    async def verify_audit(self) -> AuditCheck:
        """[`Memory.verify_audit`][tulving.Memory.verify_audit]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.verify_audit)

    async def export_audit(self, target: str | os.PathLike[str] | IO[str]) -> int:
        """[`Memory.export_audit`][tulving.Memory.export_audit]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.export_audit, target)

    async def audit_log(self, entry: str | None = None) -> list[AuditRecord]:
        """[`Memory.audit_log`][tulving.Memory.audit_log]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.audit_log, entry)

    async def health(self) -> HealthReport:
        """[`Memory.health`][tulving.Memory.health]:
        a read, on a worker thread beside other reads."""
        return await self._read(self.memory.health)

    # sessions ----------------------------------------------------------------------------
    @asynccontextmanager
    async def session(self, goal: str | None = None) -> AsyncIterator[AsyncMemory]:
        """``async with memory.session("fix the login bug"):`` writes inside belong to
        the session, which ends (and is summarised) on exit, error or cancellation."""
        await self._write(self.memory.start_session, goal)
        try:
            yield self
        finally:
            with anyio.CancelScope(shield=True):
                await self._write(self.memory.end_session)

    @property
    def session_id(self) -> str | None:
        return self.memory.session_id

