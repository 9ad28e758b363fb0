"""What an operator reads of a whole store, and whether the adapters answer: the figures
the memory server's ``/metrics`` scrapes (``store_census``) and the check ``tulving
doctor`` and the MCP server run at start (``warm_up``).

Why here and not in the doors: the doors used to reach through ``memory.ctx`` for the
store, the embedder and the tokenizer, so a change of the context broke them unseen.
These read the adapters for them and answer in typed reports. The census reads
store-wide figures (every tenant), which is why only a server's root Memory offers it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Protocol, runtime_checkable

import attrs

from tulving.application.plumbing.context import MemoryContext
from tulving.domain.enrichment import TaskBacklog
from tulving.domain.reports import Report
from tulving.domain.sync_records import DELTA_PENDING, DELTA_QUARANTINED
from tulving.ports.embedder import Preloads
from tulving.ports.storage import EnrichmentTasks, EntryCensus, SyncLog

#: Deltas counted per tenant and state at most (a count beyond it reads as this many).
MAX_DELTAS = 100_000


@runtime_checkable
class PoolStats(Protocol):
    """What a connection pool tells (``psycopg_pool.ConnectionPool.get_stats``)."""

    def get_stats(self) -> Mapping[str, int]: ...


@runtime_checkable
class Pooled(Protocol):
    """Optional: a store that keeps a connection pool (the PostgreSQL adapter)."""

    pool: object


@attrs.frozen
class StoreCensus(Report):
    """Store-wide figures: active entries by tenant, background jobs not run yet, sync
    deltas pending and quarantined (over the tenants asked about). Each is None when
    the store keeps no such figure or reading it failed; ``failures`` counts those."""

    entries_by_tenant: Mapping[str, int] | None
    jobs_pending: int | None
    deltas_pending: int | None
    deltas_quarantined: int | None
    failures: int
    #: Enrichment tasks per kind (pending, running, failed), store-wide.
    enrichment: Mapping[str, TaskBacklog] | None = None


def store_census(ctx: MemoryContext, tenants: Iterable[str]) -> StoreCensus:
    """Read every figure, each on its own (one that fails is counted, the rest read)."""
    storage = ctx.storage
    failures = 0
    census: dict[str, int] | None = None
    if isinstance(storage, EntryCensus):
        try:
            census = dict(storage.active_entries_by_tenant())
        except Exception:
            failures += 1
    jobs: int | None = None
    try:
        jobs = len(storage.pending_jobs())
    except Exception:
        failures += 1
    pending = quarantined = None
    if isinstance(storage, SyncLog):
        asked = sorted(set(tenants) | set(census or {}))
        try:
            pending = quarantined = 0
            for tenant in asked:
                pending += len(storage.sync_deltas(
                    tenant, storage.sync_watermark(tenant), MAX_DELTAS,
                    states=(DELTA_PENDING,)))
                quarantined += len(storage.sync_deltas(tenant, 0, MAX_DELTAS,
                                                       states=(DELTA_QUARANTINED,)))
        except Exception:
            failures += 1
            pending = quarantined = None
    enrichment: dict[str, TaskBacklog] | None = None
    if isinstance(storage, EnrichmentTasks):
        try:
            enrichment = dict(storage.task_backlog(ctx.clock.now()))
        except Exception:
            failures += 1
    return StoreCensus(census, jobs, pending, quarantined, failures, enrichment)


def pool_stats(ctx: MemoryContext) -> Mapping[str, int] | None:
    """The store's connection pool figures (``pool_size``, ``pool_available``,
    ``pool_max``, ``requests_waiting``), None when it keeps no pool or cannot say."""
    storage = ctx.storage
    pool = storage.pool if isinstance(storage, Pooled) else None
    if not isinstance(pool, PoolStats):
        return None
    try:
        return {k: int(v) for k, v in pool.get_stats().items()}
    except Exception:
        return None


@attrs.frozen
class EmbedderCheck(Report):
    """The embedder answered: its model, the dimension of its vectors, and how long one
    short text took (its model loaded by then)."""

    model_id: str
    dimension: int
    embed_ms: float


@attrs.frozen
class Readiness(Report):
    """``warm_up``: the embedder's check (None: none configured, search is lexical), and
    the tokenizer's name and whether it counts (None: none configured)."""

    embedder: EmbedderCheck | None
    tokenizer: str | None
    tokenizer_ok: bool


def warm_up(ctx: MemoryContext) -> Readiness:
    """Load a lazily loaded model now and embed one short text, so the first request does
    not pay for it; count tokens of another."""
    checked = None
    embedder = ctx.embedder
    if embedder is not None:
        if isinstance(embedder, Preloads):
            embedder.load()
        began = time.perf_counter()
        embedder.embed(["doctor check"])
        checked = EmbedderCheck(embedder.model_id, embedder.dimension,
                                round((time.perf_counter() - began) * 1000, 2))
    tokenizer = ctx.tokenizer
    return Readiness(checked, tokenizer.name if tokenizer is not None else None,
                     tokenizer is not None and tokenizer.count("hello world") > 0)
