"""Access statistics are recorded in batches, not one write per read.

Reads (get, search hits, curate inclusions) queue ids here; the queue is flushed in one
storage call when it grows past ``max_pending``, when ``max_age_s`` has passed since the
oldest queued access, and on close; a due batch is written by a background thread, so no
read waits for it. A crash may lose the last few access counts, never an entry: access
stats are advisory inputs to decay and ranking.
"""

from __future__ import annotations

from collections.abc import Iterable

from tulving.application.plumbing.batching import BatchQueue
from tulving.ports.clock import Clock
from tulving.ports.storage import Storage

#: Ids queued before a batch is due (or ``max_age_s``). Few large batches beat many small
#: ones: every batch costs a transaction, a thread and WAL upkeep beside the reads it
#: runs with. Measured on hybrid search at 100k entries (one process, 370 queries):
#: p95 8.2 ms with batches of 256, 5.0 ms with 1,024, 4.4 ms with 4,096, against 4.2 ms
#: with no access statistics at all.
MAX_PENDING = 4096


class AccessTracker:
    def __init__(
        self, storage: Storage, clock: Clock, *, max_pending: int = MAX_PENDING,
        max_age_s: float = 2.0,
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
