"""Access statistics are recorded without a write of the read's own.

Reads (get, search hits, curate inclusions) note the ids they returned here. On a store
with a read journal the ids are journaled with the read (durable when it returns) and
settled into the entries later (``plumbing.read_settling``). On one without, they are
queued and written in one storage call when the queue grows past ``max_pending``, when
``max_age_s`` has passed since the oldest queued access, and on close, by a background
thread, so no read waits for it; a crash may lose the last few access counts there,
never an entry: access stats are advisory inputs to decay and ranking.
"""

from __future__ import annotations

from collections.abc import Iterable

from tulving.application.plumbing.batching import BatchQueue
from tulving.application.plumbing.read_settling import JournaledReads
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
        max_age_s: float = 2.0, journal: JournaledReads | None = None,
    ) -> None:
        self._journal = journal
        self._queue: BatchQueue[str] = BatchQueue(
            lambda ids: storage.touch(ids, clock.now()),
            max_pending=max_pending, max_age_s=max_age_s, background=True,
            name="access statistics",
        )

    def record(self, entry_ids: Iterable[str]) -> None:
        if self._journal is not None:
            ids = list(entry_ids)
            if ids:
                self._journal.record((), ids)
            return
        self._queue.add(entry_ids)

    def flush(self) -> None:
        """Every access noted so far into the entries (this may wait for a write)."""
        if self._journal is not None:
            self._journal.settle()
            return
        self._queue.flush()
