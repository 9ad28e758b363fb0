"""Keeping the vector index and the embedding space consistent with storage.

Storage holds the vectors and is the source of truth. At startup:

1. model identity: ``meta`` records the embedder's model id, dimension and metric. A
   different model means a different vector space: every stored vector is dropped and
   every active entry re-embedded (batched, with progress) — never mixed;
2. entries written without a vector (e.g. while no embedder was configured, or by a
   process that crashed between the database write and the embedding) are embedded;
3. the index (a cache) is brought up to date with storage. When storage keeps a vector
   change log and the index's cache records the position it was saved at (see
   ``ports.storage.VectorChangeLog`` and ``ports.vectors.SyncedVectorIndex``), only the
   entries changed since are read: an open costs the changes, not the store (reading
   and comparing every stored vector took 5.4 s at a million memories). Otherwise (no
   log, a cache without a position, a cache of another store or from beyond the log's
   end, a log trimmed past it) the index is compared with every stored vector and
   rebuilt when it differs, as before.

After startup the same catch-up runs after each write (the index reads back what the
write committed, in log order, so a concurrent search never sees a stale vector after a
newer one) and, in a read-only Memory, before each read: a reader in another process
then sees what the writer committed, including entries whose vectors the writer's cache
file does not hold yet. The writer saves its cache when the changes it lacks are worth
a rewrite (``SAVE_MIN``, ``SAVE_SHARE``) or on ``flush``, and trims the log up to what
the saved file holds.
"""

from __future__ import annotations

import secrets
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import (
    REPRESENTATION_META,
    embed_entries,
    representation_id,
)
from tulving.application.plumbing.warnings_once import log, warn_once
from tulving.domain.errors import ModelMismatchError, VectorIndexError
from tulving.domain.query import STORE_WIDE, EntryFilter
from tulving.ports.storage import ReadOnlyOpen, VectorChangeLog
from tulving.ports.vectors import FillsFromStorage, IndexInStore, SyncedVectorIndex

Progress = Callable[[str, int, int], None]
EMBED_BATCH = 64
FILL_BATCH = 1000
#: The meta row naming a store for its index caches (a cache of another store never
#: matches, whatever its position).
EPOCH_META = "vector_epoch"
#: Changes read from the log per step of a catch-up.
CATCH_UP_BATCH = 2000
#: A writer rewrites its cache file once it lacks this many changes, or this share of the
#: index, whichever is more (a one-shot command that stored a few memories does not
#: rewrite a large file: the log carries them to the next open).
SAVE_MIN = 20_000
SAVE_SHARE = 0.10
#: On close, a cache lacking this many changes is saved (replaying fewer at the next open
#: costs well under a tenth of a second; a one-shot command that stored a memory or two
#: leaves the file alone).
SAVE_ON_CLOSE = 1_000

#: One lock per index object (views of a Memory share their parent's index), and each
#: store's epoch once read; weakly keyed, so a closed store's entry goes with it.
_locks: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_epochs: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def _lock(ctx: MemoryContext) -> threading.RLock:
    with _guard:
        lock = _locks.get(ctx.vectors)
        if lock is None:
            lock = _locks[ctx.vectors] = threading.RLock()
        return lock


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
    if read_only(ctx):
        if changed:
            raise ModelMismatchError(
                f"this store was embedded with {recorded}, and this command's embedder is "
                f"{embedder.model_id}: a read-only open never re-embeds. Search it with the "
                "store's own model, or move the store to the new model once with "
                "`tulving maintenance reembed --embedder ...` (Memory.maintenance('reembed'))")
        return False
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


def read_only(ctx: MemoryContext) -> bool:
    storage = ctx.storage
    return isinstance(storage, ReadOnlyOpen) and storage.read_only


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
    if not stored and not read_only(ctx):
        storage.set_meta(REPRESENTATION_META, current)
        return current
    if read_only(ctx):
        return recorded
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
    """Embed entries stored without a vector (not in a read-only Memory: it writes
    nothing, and search finds them lexically until the writer embeds them)."""
    embedder, storage = ctx.embedder, ctx.storage
    if embedder is None or read_only(ctx):
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
    """Bring the index up to date with storage at startup; True if it was rebuilt.

    Incremental when it can be (see the module docstring), else the full comparison."""
    vectors = ctx.vectors
    if vectors is None or ctx.embedder is None:
        return False
    with _lock(ctx):
        if _incremental(ctx):
            return False
        return _reconcile_in_full(ctx, progress)


def catch_up(ctx: MemoryContext) -> None:
    """Apply the changes storage logged since the index's position (after a write; before
    a read in a read-only Memory). Does nothing for a store or index without the log."""
    if ctx.vectors is None or ctx.embedder is None:
        return
    if not _supports_log(ctx):
        return
    with _lock(ctx):
        if not _incremental(ctx):
            _reconcile_in_full(ctx, None)


def index_written(ctx: MemoryContext, entry_ids: Sequence[str]) -> None:
    """After vectors of ``entry_ids`` were committed outside a write (the enrichment
    worker): the index reads them back from the change log when it follows one, holds
    exactly those of active entries otherwise; an index inside the store was changed by
    the commit itself."""
    vectors = ctx.vectors
    if vectors is None or ctx.embedder is None:
        return
    if isinstance(vectors, IndexInStore) and vectors.in_store:
        return
    if follows_log(ctx):
        catch_up(ctx)
        save_index(ctx)
        return
    with _lock(ctx):
        _apply(ctx, list(entry_ids))


def save_index(ctx: MemoryContext, *, force: bool = False, closing: bool = False) -> None:
    """Write the index cache when it lacks enough changes to be worth a rewrite (always
    with ``force``; from ``SAVE_ON_CLOSE`` changes when ``closing``; always when no cache
    was saved yet), then trim the log up to what the saved file holds."""
    vectors = ctx.vectors
    if vectors is None or read_only(ctx):
        return
    with _lock(ctx):
        if not _supports_log(ctx):
            vectors.persist()
            return
        catch_up(ctx)
        index: Any = vectors
        unsaved = index.unsaved_changes()
        due = max(SAVE_MIN, int(SAVE_SHARE * vectors.count()))
        if closing:
            due = SAVE_ON_CLOSE
        if force or unsaved >= due or (unsaved and index.saved_position() is None):
            vectors.persist()
        _trim(ctx)


def follows_log(ctx: MemoryContext) -> bool:
    """True when the index follows storage's vector change log (``catch_up`` keeps it)."""
    return ctx.vectors is not None and ctx.embedder is not None and _supports_log(ctx)


def _supports_log(ctx: MemoryContext) -> bool:
    return isinstance(ctx.storage, VectorChangeLog) and isinstance(ctx.vectors,
                                                                  SyncedVectorIndex)


def _epoch(ctx: MemoryContext) -> str:
    """The store's name for its caches; a writer gives a store one on first use (a reader
    of a store that has none yet uses "", which no saved cache carries)."""
    storage = ctx.storage
    known = _epochs.get(storage)
    if known:
        return known
    epoch = storage.get_meta(EPOCH_META)
    if epoch is None and not read_only(ctx):
        epoch = secrets.token_hex(8)
        storage.set_meta(EPOCH_META, epoch)
    if epoch:
        with _guard:
            _epochs[storage] = epoch
    return epoch or ""


def _incremental(ctx: MemoryContext) -> bool:
    """Catch up from the index's position; False when only a full comparison can tell."""
    if not _supports_log(ctx):
        return False
    storage: Any = ctx.storage
    index: Any = ctx.vectors
    epoch = _epoch(ctx)
    position = index.sync_position()
    if position is None or position[0] != epoch:
        return False
    at = int(position[1])
    end = int(storage.vector_log_position())
    if at > end:  # a cache from beyond this store's log: a restored or replaced file
        return False
    while at < end:
        step = storage.vector_changes(at, CATCH_UP_BATCH)
        if step is None:  # the writer trimmed past us: its newer cache file starts later
            if index.read_only:
                index.open(ctx.embedder.dimension)  # type: ignore[union-attr]
                return _reopened(ctx, epoch, at)
            return False
        changed, reached = step
        if reached <= at:
            break
        _apply(ctx, changed)
        at = reached
        index.mark_synced(epoch, at)
    return True


def _reopened(ctx: MemoryContext, epoch: str, at: int) -> bool:
    """After a reader reloaded the writer's newer cache: catch up from its position."""
    index: Any = ctx.vectors
    position = index.sync_position()
    if position is None or position[0] != epoch or position[1] < at:
        return False
    return _incremental(ctx)


def _apply(ctx: MemoryContext, changed: Sequence[str]) -> None:
    """Make the index hold exactly the current vectors of ``changed``: those of active
    entries that have one, and nothing for the others."""
    vectors, storage = ctx.vectors, ctx.storage
    assert vectors is not None
    for start in range(0, len(changed), 500):
        chunk = list(changed[start:start + 500])
        active = storage.ids_matching(EntryFilter(partitions=STORE_WIDE, ids=tuple(chunk)))
        found = storage.vectors_for([i for i in chunk if i in active])
        gone = [i for i in chunk if i not in found]
        if gone:
            vectors.remove(gone)
        if found:
            ids = list(found)
            vectors.add(ids, np.stack([np.asarray(found[i], dtype=np.float32) for i in ids]))


def _trim(ctx: MemoryContext) -> None:
    index: Any = ctx.vectors
    saved = index.saved_position()
    if saved is not None and saved[0] == _epoch(ctx) and saved[1] > 0:
        ctx.storage.trim_vector_log(int(saved[1]))  # type: ignore[attr-defined]


def _mark_full(ctx: MemoryContext, position: int | None) -> None:
    """Record that the index now reflects storage as of ``position`` (read before the
    stored vectors were)."""
    if position is None or not _supports_log(ctx):
        return
    index: Any = ctx.vectors
    index.mark_synced(_epoch(ctx), position)


def _position(ctx: MemoryContext) -> int | None:
    storage: Any = ctx.storage
    return int(storage.vector_log_position()) if isinstance(storage, VectorChangeLog) else None


def _reconcile_in_full(ctx: MemoryContext, progress: Progress | None) -> bool:
    """Compare the index with every stored vector; rebuild it when they differ."""
    vectors, storage = ctx.vectors, ctx.storage
    assert vectors is not None
    flt = _unrestricted(ctx)
    position = _position(ctx)
    # An index that does not keep its own copy of the vectors on disk (hnsw) takes the
    # ones read here, which this check reads anyway (optional: ``fill_vectors``).
    fill = (vectors.fill_vectors
            if isinstance(vectors, FillsFromStorage) and vectors.needs_vectors else None)
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
        _mark_full(ctx, position)
        return False
    log.info("vector index is stale (%d cached, %d stored): rebuilding",
             vectors.count(), len(expected))
    rebuild_index(ctx, progress)
    return True


def rebuild_index(ctx: MemoryContext, progress: Progress | None = None) -> int:
    vectors, storage = ctx.vectors, ctx.storage
    if vectors is None:
        return 0
    with _lock(ctx):
        flt = _unrestricted(ctx)
        position = _position(ctx)
        total = storage.count(flt)
        report = (lambda done, all_: progress("indexing", done, all_)) if progress else None
        vectors.rebuild(storage.iter_vectors(flt), total, report)
        _mark_full(ctx, position)
        if not read_only(ctx):
            vectors.persist()
            if _supports_log(ctx):
                _trim(ctx)
        return vectors.count()


def _unrestricted(ctx: MemoryContext) -> EntryFilter:
    """All active entries of every tenant: one index serves the whole store."""
    return EntryFilter(partitions=STORE_WIDE)
