"""A queue that writes in batches: when it holds ``max_pending`` items, when ``max_age_s``
has passed since its oldest item, or when flushed. Reads queue their bookkeeping here
(access statistics, read audit records) so a read never costs a write of its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class BatchQueue(Generic[T]):
    def __init__(
        self, sink: Callable[[list[T]], object], *, max_pending: int, max_age_s: float
    ) -> None:
        self._sink = sink  # its return value, if any, is ignored
        self._pending: list[T] = []
        self._first_at = 0.0
        self._lock = threading.Lock()
        self._max_pending = max_pending
        self._max_age_s = max_age_s

    def add(self, items: Iterable[T]) -> None:
        with self._lock:
            if not self._pending:
                self._first_at = time.monotonic()
            self._pending.extend(items)
            due = (
                len(self._pending) >= self._max_pending
                or time.monotonic() - self._first_at >= self._max_age_s
            )
        if due:
            self.flush()

    def take(self) -> list[T]:
        """Remove and return everything queued (for a caller writing it itself)."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def flush(self) -> None:
        pending = self.take()
        if pending:
            self._sink(pending)
