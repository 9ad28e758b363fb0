"""Keeping the vector index and the embedding space consistent with storage.

Storage holds the vectors and is the source of truth. At startup:

1. model identity: ``meta`` records the embedder's model id, dimension and metric. A
   different model means a different vector space: every stored vector is dropped and
   every active entry re-embedded (batched, with progress) — never mixed;
2. entries written without a vector (e.g. while no embedder was configured, or by a
   process that crashed between the database write and the embedding) are embedded;
3. the index (a cache) is compared with storage; a missing, stale or corrupt index is
   rebuilt from the stored vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import (
    REPRESENTATION_META,
    embed_entries,
    representation_id,
)
from tulving.application.plumbing.warnings_once import log, warn_once
from tulving.domain.errors import VectorIndexError
from tulving.domain.query import STORE_WIDE, EntryFilter

Progress = Callable[[str, int, int], None]
EMBED_BATCH = 64
FILL_BATCH = 1000


def check_model(ctx: MemoryContext, progress: Progress | None = None) -> bool:
    """Record or verify the embedding model; re-embed on a change. True if re-embedded."""
    embedder, storage = ctx.embedder, ctx.storage
    if embedder is None:
        return False
    recorded = storage.get_meta("embedding_model_id")
    if recorded == embedder.model_id:
        dim = storage.get_meta("embedding_dimension")
        if dim is not None and int(dim) != embedder.dimension:
            raise VectorIndexError(
                f"model {embedder.model_id} was recorded with dimension {dim}, "
                f"the embedder now gives {embedder.dimension}"
            )
        return False
    changed = recorded is not None
    if changed:
        log.warning(
            "embedding model changed from %s to %s: re-embedding every active entry",
            recorded, embedder.model_id,
        )
        storage.clear_vectors()
    with storage.transaction():
        storage.set_meta("embedding_model_id", embedder.model_id)
        storage.set_meta("embedding_dimension", str(embedder.dimension))
        storage.set_meta("distance_metric", "cosine")
        # every vector is (re)built from here on by the current rule
        storage.set_meta(REPRESENTATION_META, representation_id(ctx.context_window))
    return changed


def note_representation(ctx: MemoryContext) -> str | None:
    """Say so (once) when the stored vectors were built by another rule or context window
    than this Memory's; return the recorded one. Nothing is re-embedded here: another
    opener may use another ``writing.context_window``, and re-embedding a large store
    takes long, so it is left to ``maintenance("reembed")``, asked for on purpose. A
    store with no vectors yet simply records the current rule."""
    storage, vectors = ctx.storage, ctx.vectors
    if ctx.embedder is None:
        return None
    current = representation_id(ctx.context_window)
    recorded = storage.get_meta(REPRESENTATION_META)
    if recorded == current:
        return recorded
    stored = vectors.count() if vectors is not None else 0
    if not stored:
        storage.set_meta(REPRESENTATION_META, current)
        return current
    warn_once(
        f"representation:{recorded}->{current}",
        f"this store's vectors were built by {recorded or 'an older rule'} and this Memory "
        f"builds {current}: new and old memories are embedded differently until the store "
        "is re-embedded (memory.maintenance('reembed') or `tulving maintenance reembed`)",
    )
    return recorded


def reembed_all(ctx: MemoryContext, progress: Progress | None = None) -> int:
    """Rebuild every active entry's vector by the current rule; the number embedded.

    The old vectors are dropped and the new rule recorded in one transaction, then the
    entries are embedded as "missing": a crash part-way leaves entries without a vector,
    which the next startup embeds (``embed_missing``) by its opener's rule, the recorded
    one unless that opener uses another window (then it warns as for any mismatch).
    """
    storage = ctx.storage
    if ctx.embedder is None:
        return 0
    with storage.transaction():
        storage.clear_vectors()
        storage.set_meta(REPRESENTATION_META, representation_id(ctx.context_window))
    done = embed_missing(ctx, progress)
    rebuild_index(ctx, progress)
    return done


def embed_missing(ctx: MemoryContext, progress: Progress | None = None) -> int:
    embedder, storage = ctx.embedder, ctx.storage
    if embedder is None:
        return 0
    flt = _unrestricted(ctx)
    total = 0  # counted only when something is missing (a count costs ~1 s at 1M rows)
    done = 0
    while True:
        batch = storage.missing_vectors(flt, EMBED_BATCH)
        if not batch:
            break
        total = total or storage.count(flt)
        vectors = embed_entries(ctx, batch)
        storage.put_vectors([(e.id, vectors[i]) for i, e in enumerate(batch)])
        done += len(batch)
        if progress:
            progress("embedding", done, total)
    return done


def reconcile_index(ctx: MemoryContext, progress: Progress | None = None) -> bool:
    """Rebuild the index from storage when it differs; True if it was rebuilt."""
    vectors, storage = ctx.vectors, ctx.storage
    if vectors is None or ctx.embedder is None:
        return False
    flt = _unrestricted(ctx)
    # An index that does not keep its own copy of the vectors on disk (hnsw) takes the
    # ones read here, which this check reads anyway (optional: ``fill_vectors``).
    fill = getattr(vectors, "fill_vectors", None) if getattr(vectors, "needs_vectors",
                                                            False) else None
    expected: set[str] = set()
    ids: list[str] = []
    rows: list[Any] = []
    for entry_id, vector in storage.iter_vectors(flt):
        expected.add(entry_id)
        if fill is not None:
            ids.append(entry_id)
            rows.append(vector)
            if len(ids) >= FILL_BATCH:
                fill(ids, np.stack(rows))
                ids, rows = [], []
    if fill is not None and ids:
        fill(ids, np.stack(rows))
    if vectors.ids() == expected:
        return False
    log.info("vector index is stale (%d cached, %d stored): rebuilding",
             vectors.count(), len(expected))
    rebuild_index(ctx, progress)
    return True


def rebuild_index(ctx: MemoryContext, progress: Progress | None = None) -> int:
    vectors, storage = ctx.vectors, ctx.storage
    if vectors is None:
        return 0
    flt = _unrestricted(ctx)
    total = storage.count(flt)
    report = (lambda done, all_: progress("indexing", done, all_)) if progress else None
    vectors.rebuild(storage.iter_vectors(flt), total, report)
    vectors.persist()
    return vectors.count()


def _unrestricted(ctx: MemoryContext) -> EntryFilter:
    """All active entries of every tenant: one index serves the whole store."""
    return EntryFilter(partitions=STORE_WIDE)
