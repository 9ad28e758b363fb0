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
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from typing import IO, Any, Literal, TypeVar, overload

import anyio
import anyio.to_thread

from tulving.application.agent_memory.jobs import RememberJob
from tulving.application.memory import Memory
from tulving.application.portability.exporter import ExportReport
from tulving.application.portability.importer import ImportReport
from tulving.application.retrieval.lookup import EntryPage
from tulving.domain.curated import CuratedContext
from tulving.domain.enrichment import EnrichmentReport
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.memory_reports import ConsolidationReport, Profile, StatsReport
from tulving.domain.migration_reports import MigrationExport, MigrationReport
from tulving.domain.query import SearchResult

T = TypeVar("T")


class AsyncMemory:
    """``AsyncMemory(path, agent_id=..., **same keywords as Memory)``; use it with
    ``async with`` (or ``await m.startup()`` / ``await m.aclose()``)."""

    def __init__(self, *args: Any, max_concurrency: int = 8, **kwargs: Any) -> None:
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
                or max_concurrency < 1:
            raise ValidationError("max_concurrency must be a positive integer")
        self.memory = Memory(*args, **kwargs)
        self._readers = anyio.CapacityLimiter(max_concurrency)
        self._writes = anyio.Lock()

    @classmethod
    def wrapping(cls, memory: Memory, *, max_concurrency: int = 8) -> AsyncMemory:
        """An async face for an existing ``Memory`` (the same store and identity)."""
        self = cls.__new__(cls)
        self.memory = memory
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

    # writes ------------------------------------------------------------------------------
    async def store(self, content: str, **fields: Any) -> MemoryEntry:
        """[`Memory.store`][tulving.Memory.store]: a write, queued behind
        other writes, on a worker thread."""
        return await self._write(self.memory.store, content, **fields)

    async def store_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryEntry]:
        """[`Memory.store_many`][tulving.Memory.store_many]: a write, queued behind
        other writes, on a worker thread."""
        return await self._write(self.memory.store_many, list(items))

    @overload
    async def remember(
        self, text: str, *, source_type: str = ..., idempotency_key: str | None = ...,
        wait: Literal[True] | None = ..., valid_from: datetime | None = ...,
        subject: str | None = ...,
    ) -> list[MemoryEntry]: ...

    @overload
    async def remember(
        self, text: str, *, source_type: str = ..., idempotency_key: str | None = ...,
        wait: Literal[False], valid_from: datetime | None = ..., subject: str | None = ...,
    ) -> RememberJob: ...

    async def remember(
        self, text: str, *, source_type: str = "conversation",
        idempotency_key: str | None = None, wait: bool | None = None,
        valid_from: datetime | None = None, subject: str | None = None,
    ) -> list[MemoryEntry] | RememberJob:
        """[`Memory.remember`][tulving.Memory.remember]: a write, queued behind
        other writes, on a worker thread."""
        return await self._write(self.memory.remember, text, source_type=source_type,
                                 idempotency_key=idempotency_key, wait=wait,
                                 valid_from=valid_from, subject=subject)

    async def forget(self, key_or_id: str, *, hard: bool = False) -> MemoryEntry:
        """[`Memory.forget`][tulving.Memory.forget]: a write, queued behind
        other writes, on a worker thread."""
        return await self._write(self.memory.forget, key_or_id, hard=hard)

    async def correct(self, key_or_id: str, new_content: str, **fields: Any) -> MemoryEntry:
        """[`Memory.correct`][tulving.Memory.correct]: a write, queued behind
        other writes, on a worker thread."""
        return await self._write(self.memory.correct, key_or_id, new_content, **fields)

    async def consolidate(self, **options: Any) -> ConsolidationReport:
        """[`Memory.consolidate`][tulving.Memory.consolidate]: a write, queued behind
        other writes, on a worker thread."""
        return await self._write(self.memory.consolidate, **options)

    async def import_bundle(self, source: str | IO[bytes], **options: Any) -> ImportReport:
        """[`Memory.import_bundle`][tulving.Memory.import_bundle]: a write, queued behind
        other writes, on a worker thread."""
        return await self._write(self.memory.import_bundle, source, **options)

    async def import_from(self, source: str | bytes | IO[bytes], *, format: str,
                          **options: Any) -> MigrationReport:
        """[`Memory.import_from`][tulving.Memory.import_from]: a write, queued behind
        other writes, on a worker thread."""
        return await self._write(self.memory.import_from, source, format=format, **options)

    # reads -------------------------------------------------------------------------------
    async def get(self, key_or_id: str, *, as_of: datetime | None = None) -> MemoryEntry:
        """[`Memory.get`][tulving.Memory.get]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.get, key_or_id, as_of=as_of)

    async def search(self, query: str, top_k: int = 10, **options: Any) -> list[SearchResult]:
        """[`Memory.search`][tulving.Memory.search]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.search, query, top_k, **options)

    async def curate(self, query: str | None = None, **options: Any) -> CuratedContext:
        """[`Memory.curate`][tulving.Memory.curate]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.curate, query, **options)

    async def history(self, key: str) -> list[MemoryEntry]:
        """[`Memory.history`][tulving.Memory.history]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.history, key)

    async def list_keys(self, prefix: str = "") -> list[str]:
        """[`Memory.list_keys`][tulving.Memory.list_keys]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.list_keys, prefix)

    async def list_entries(self, limit: int = 100, cursor: str | None = None,
                           **filters: Any) -> EntryPage:
        """[`Memory.list_entries`][tulving.Memory.list_entries]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.list_entries, limit, cursor, **filters)

    async def profile(self, subject: str = "user") -> Profile:
        """[`Memory.profile`][tulving.Memory.profile]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.profile, subject)

    async def stats(self) -> StatsReport:
        """[`Memory.stats`][tulving.Memory.stats]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.stats)

    async def wait_enriched(self, timeout: float | None = None, *,
                            kinds: Iterable[str] | None = None) -> EnrichmentReport:
        """[`Memory.wait_enriched`][tulving.Memory.wait_enriched]: on a worker thread
        (it may run the background work itself), so the event loop goes on."""
        return await self._read(self.memory.wait_enriched, timeout, kinds=kinds)

    async def count_tokens(self, text: str) -> int:
        """[`Memory.count_tokens`][tulving.Memory.count_tokens]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.count_tokens, text)

    async def export(self, target: str | IO[bytes], **options: Any) -> ExportReport:
        """[`Memory.export`][tulving.Memory.export]: a read, on a worker
        thread beside other reads."""
        return await self._read(self.memory.export, target, **options)

    async def export_to(self, target: str | IO[bytes], *, format: str,
                        **options: Any) -> MigrationExport:
        """[`Memory.export_to`][tulving.Memory.export_to]: a read, on a worker thread
        beside other reads."""
        return await self._read(self.memory.export_to, target, format=format, **options)

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

