"""A queue that writes in batches: when it holds ``max_pending`` items, when ``max_age_s``
has passed since its oldest item, or when flushed. Reads queue their bookkeeping here
(access statistics, read audit records) so a read never costs a write of its own.

With ``background=True`` a due batch is written by a short-lived worker thread instead of
the read that made it due, so no read pays for the write (access statistics: a curate at
100k entries otherwise spends several milliseconds, now and then, updating counters).
``flush()`` waits for that worker and then writes what is left, so after it returns every
item added before it is written. A failed background write is reported once as a
``TulvingWarning`` and its items are dropped: only advisory data belongs in such a queue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from tulving.application.plumbing.warnings_once import warn_once

T = TypeVar("T")


class BatchQueue(Generic[T]):
    def __init__(
        self,
        sink: Callable[[list[T]], object],
        *,
        max_pending: int,
        max_age_s: float,
        background: bool = False,
        name: str = "batch",
    ) -> None:
        self._sink = sink  # its return value, if any, is ignored
        self._pending: list[T] = []
        self._first_at = 0.0
        self._lock = threading.Lock()
        self._max_pending = max_pending
        self._max_age_s = max_age_s
        self._background = background
        self._name = name
        self._worker: threading.Thread | None = None

    def add(self, items: Iterable[T]) -> None:
        with self._lock:
            if not self._pending:
                self._first_at = time.monotonic()
            self._pending.extend(items)
            due = (
                len(self._pending) >= self._max_pending
                or time.monotonic() - self._first_at >= self._max_age_s
            )
            if due and self._background:
                if self._worker is None:
                    self._worker = threading.Thread(
                        target=self._drain, name=f"tulving-{self._name}", daemon=True)
                    self._worker.start()
                return
        if due:
            self.flush()

    def _drain(self) -> None:
        while True:
            with self._lock:
                pending, self._pending = self._pending, []
                if not pending:
                    self._worker = None
                    return
            try:
                self._sink(pending)
            except Exception as exc:  # advisory data: report it, never raise in a thread
                warn_once(f"batch-{self._name}",
                          f"writing queued {self._name} in the background failed: {exc}")

    def take(self) -> list[T]:
        """Remove and return everything queued (for a caller writing it itself)."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def flush(self) -> None:
        with self._lock:
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        pending = self.take()
        if pending:
            self._sink(pending)
