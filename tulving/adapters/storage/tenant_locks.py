"""One lock per tenant, for stores with one writer process (SQLite, in memory): the sync
merge claim of ``tulving.ports.storage.SyncLog.sync_merger``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class TenantLocks:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    @contextmanager
    def held(self, tenant: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(tenant, threading.Lock())
        with lock:
            yield
