"""Access statistics are recorded in batches, not one write per read.

Reads (get, search hits, curate inclusions) queue ids here; the queue is flushed in one
storage call when it grows past ``max_pending``, when ``max_age_s`` has passed since the
oldest queued access, and on close; a due batch is written by a background thread, so no
read waits for it. A crash may lose the last few access counts, never an entry: access
stats are advisory inputs to decay and ranking.
"""

from __future__ import annotations

from collections.abc import Iterable

from tulving.application.batching import BatchQueue
from tulving.ports.clock import Clock
from tulving.ports.storage import Storage


class AccessTracker:
    def __init__(
        self, storage: Storage, clock: Clock, *, max_pending: int = 256, max_age_s: float = 2.0
    ) -> None:
        self._queue: BatchQueue[str] = BatchQueue(
            lambda ids: storage.touch(ids, clock.now()),
            max_pending=max_pending, max_age_s=max_age_s, background=True,
            name="access statistics",
        )

    def record(self, entry_ids: Iterable[str]) -> None:
        self._queue.add(entry_ids)

    def flush(self) -> None:
        self._queue.flush()
