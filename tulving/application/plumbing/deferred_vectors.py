"""The built-in ``vectors`` enrichment: the fast embedder's vectors of entries a write
committed without them (a write that deferred its embedding so it returns at once).

Each vector is built by the same rule as a write's (``representation.embed_entries``),
so the index holds one kind of vector whichever path wrote it. An entry that has a vector
by the time its task runs (embedded at startup by ``vector_sync.embed_missing``, which
repairs what a lost task leaves) is not embedded again; one deleted since is skipped.
"""

from __future__ import annotations

import numpy as np

from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.representation import embed_entries
from tulving.application.plumbing.vector_sync import EMBED_BATCH, index_written

KIND = "vectors"


class DeferredVectors:
    kind = KIND
    batch = EMBED_BATCH

    def __init__(self, ctx: MemoryContext) -> None:
        self._ctx = ctx

    def prepare(self, targets: list[str]) -> dict[str, np.ndarray]:
        ctx = self._ctx
        if ctx.embedder is None:
            return {}
        storage = ctx.storage
        have = storage.vectors_for(targets)
        todo = [e for e in storage.get_many(targets) if e.id not in have]
        if not todo:
            return {}
        matrix = embed_entries(ctx, todo)
        return {e.id: matrix[i] for i, e in enumerate(todo)}

    def commit(self, targets: list[str], prepared: dict[str, np.ndarray]) -> None:
        storage = self._ctx.storage
        wanted = [t for t in targets if t in prepared]
        if not wanted:
            return
        present = {e.id for e in storage.get_many(wanted)}  # deleted meanwhile: skipped
        have = storage.vectors_for(wanted)  # embedded meanwhile: kept as it is
        items = [(i, prepared[i]) for i in wanted if i in present and i not in have]
        if items:
            storage.put_vectors(items)

    def after_commit(self, targets: list[str]) -> None:
        index_written(self._ctx, targets)
