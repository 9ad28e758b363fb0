"""The ``strong`` enrichment: the strong tier's vectors written in the background.

Every write queues it when the strong tier is configured (``on_write``), and a writer
opening a store whose entries lack strong vectors (a store opened with the tier for the
first time, or with another strong model) queues those once (``backfill``). The worker
encodes outside every lock (``prepare``) and stores the vectors in the transaction that
finishes the tasks (``commit``), so a vector is never written twice and a kill -9 leaves
the task queued (``plumbing.enrichment``). Until it has run, search encodes what it
needs on demand (``retrieval.strong``): the write never waits for the strong model.
"""

from __future__ import annotations

from typing import Any

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.enrichment import Enricher
from tulving.application.plumbing.write_order import writing
from tulving.application.retrieval.strong import StrongTier
from tulving.ports.storage import StrongVectors

KIND = "strong"
#: Entries one claim takes: ~16 turns a second on two cores, so a batch commits within
#: a few seconds and a kill loses little work.
BATCH = 32
#: Entries lacking a strong vector queued per statement by the backfill.
BACKFILL_CHUNK = 1000


class StrongVectorsEnrichment:
    kind = KIND
    batch = BATCH

    def __init__(self, ctx: MemoryContext, tier: StrongTier) -> None:
        self._ctx = ctx
        self._tier = tier

    def prepare(self, targets: list[str]) -> list[tuple[str, Any]]:
        storage = self._ctx.storage
        assert isinstance(storage, StrongVectors)
        have = storage.strong_vectors_for(self._tier.model_id, targets)
        todo = [(e.id, e.content) for e in storage.get_many(targets) if e.id not in have]
        return self._tier.encode_for_store(todo) if todo else []

    def commit(self, targets: list[str], prepared: list[tuple[str, Any]]) -> None:
        storage = self._ctx.storage
        assert isinstance(storage, StrongVectors)
        wanted = set(targets)
        items = [(i, v) for i, v in prepared if i in wanted]
        if items:  # entries deleted meanwhile are skipped by the store
            storage.put_strong_vectors(self._tier.model_id, items)

    def after_commit(self, targets: list[str]) -> None:
        return None


def register_strong(ctx: MemoryContext, enricher: Enricher, tier: StrongTier | None) -> bool:
    """Register the ``strong`` kind when there is a strong tier and the store keeps its
    vectors; every write then queues it."""
    if tier is None or not isinstance(ctx.storage, StrongVectors):
        return False
    enricher.register(StrongVectorsEnrichment(ctx, tier), on_write=True)
    return True


def backfill(ctx: MemoryContext, enricher: Enricher, model_id: str) -> int:
    """Queue ``strong`` for every active entry without a current strong vector (once, at
    a writer's start; queuing a queued task changes nothing). Returns how many."""
    storage = ctx.storage
    if enricher.read_only or not isinstance(storage, StrongVectors) \
            or KIND not in enricher.kinds:
        return 0
    queued = 0
    lacking = storage.lacking_strong_vectors(model_id, 10**9)
    for start in range(0, len(lacking), BACKFILL_CHUNK):
        chunk = lacking[start : start + BACKFILL_CHUNK]
        with writing(ctx):
            queued += enricher.queue(KIND, chunk)
    return queued
