"""Access statistics are recorded in batches, not one write per read.

Reads (get, search hits, curate inclusions) queue ids here; the queue is flushed in one
storage call when it grows past ``max_pending``, when ``max_age_s`` has passed since the
oldest queued access, and on close. A crash may lose the last few access counts, never
an entry: access stats are advisory inputs to decay and ranking.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from tulving.ports.clock import Clock
from tulving.ports.storage import Storage


class AccessTracker:
    def __init__(
        self, storage: Storage, clock: Clock, *, max_pending: int = 256, max_age_s: float = 2.0
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._pending: list[str] = []
        self._first_at = 0.0
        self._lock = threading.Lock()
        self._max_pending = max_pending
        self._max_age_s = max_age_s

    def record(self, entry_ids: Iterable[str]) -> None:
        with self._lock:
            if not self._pending:
                self._first_at = time.monotonic()
            self._pending.extend(entry_ids)
            due = (
                len(self._pending) >= self._max_pending
                or time.monotonic() - self._first_at >= self._max_age_s
            )
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        if pending:
            self._storage.touch(pending, self._clock.now())
