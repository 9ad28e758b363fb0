"""The sync log of the in-memory store (``tulving.ports.storage.SyncLog``).

Kept in one value the store's transaction snapshots and restores with everything else,
so an append or a settle inside a transaction that fails leaves no trace. The merge claim is
a lock per tenant of this process (nothing else can reach an in-memory store).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import attrs

from tulving.adapters.storage.tenant_locks import TenantLocks
from tulving.domain.errors import StorageError
from tulving.domain.sync_records import (
    DELTA_PENDING,
    DELTA_STORED,
    SyncDelta,
    adopted_watermark,
    check_sync_device,
    check_sync_state,
    checked_adoption,
)


@attrs.define
class SyncState:
    """Every tenant's log, bytes and watermark; ``copy`` is what a transaction keeps."""

    deltas: dict[str, list[SyncDelta]] = attrs.field(factory=dict)
    data: dict[tuple[str, int], bytes] = attrs.field(factory=dict)
    marks: dict[str, int] = attrs.field(factory=dict)

    def copy(self) -> SyncState:
        return SyncState({t: list(v) for t, v in self.deltas.items()}, dict(self.data),
                         dict(self.marks))


class InMemorySyncLog:
    """Needs ``_lock``, ``transaction()``, ``_sync`` (a :class:`SyncState`) and
    ``_merge_locks``."""

    _lock: Any
    _sync: SyncState
    _merge_locks: TenantLocks
    transaction: Any  # the store's

    def sync_append(self, tenant: str, device: str, data: bytes, *, e2e: bool,
                    at: datetime) -> tuple[SyncDelta, bool]:
        check_sync_device(device)
        delta_id = hashlib.sha256(data).hexdigest()
        with self.transaction():
            found = self.sync_find(tenant, device, delta_id)
            if found is not None:
                return found, False
            log = self._sync.deltas.setdefault(tenant, [])
            delta = SyncDelta((log[-1].seq if log else 0) + 1, device, delta_id, len(data), bool(e2e), at,
                              DELTA_STORED if e2e else DELTA_PENDING)
            log.append(delta)
            self._sync.data[(tenant, delta.seq)] = bytes(data)
            return delta, True

    def sync_find(self, tenant: str, device: str, delta_id: str) -> SyncDelta | None:
        with self._lock:
            for delta in self._sync.deltas.get(tenant, ()):
                if delta.device == device and delta.delta_id == delta_id:
                    return delta
        return None

    def sync_deltas(self, tenant: str, after: int, limit: int, *, upto: int | None = None,
                    states: Sequence[str] | None = None,
                    device: str | None = None) -> list[SyncDelta]:
        with self._lock:
            found = [d for d in self._sync.deltas.get(tenant, ())
                     if d.seq > after and (upto is None or d.seq <= upto)
                     and (states is None or d.state in states)
                     and (device is None or d.device == device)]
        return found[:max(0, int(limit))]

    def sync_read(self, tenant: str, seq: int) -> bytes | None:
        with self._lock:
            return self._sync.data.get((tenant, int(seq)))

    def sync_last(self, tenant: str) -> int:
        with self._lock:
            log = self._sync.deltas.get(tenant)
            return log[-1].seq if log else 0

    def sync_watermark(self, tenant: str) -> int:
        with self._lock:
            return self._sync.marks.get(tenant, 0)

    @contextmanager
    def sync_merger(self, tenant: str) -> Iterator[int]:
        with self._merge_locks.held(tenant):
            yield self.sync_watermark(tenant)

    def sync_settle(self, tenant: str, seq: int, state: str,
                    reason: str | None = None) -> None:
        check_sync_state(state)
        with self.transaction():
            log = self._sync.deltas.get(tenant, [])
            mark = self._sync.marks.get(tenant, 0)
            at = next((i for i, d in enumerate(log) if d.seq > mark), None)
            if at is None or log[at].seq != seq:
                raise StorageError(f"delta {seq} is not the next to settle (watermark {mark})")
            log[at] = attrs.evolve(log[at], state=state, reason=reason)
            self._sync.marks[tenant] = seq

    def sync_adopt(self, tenant: str, deltas: Sequence[SyncDelta],
                   data: Sequence[bytes]) -> int:
        ordered = checked_adoption(deltas, data)
        with self.transaction():
            if self._sync.deltas.get(tenant):
                return 0
            self._sync.deltas[tenant] = [d for d, _ in ordered]
            for delta, blob in ordered:
                self._sync.data[(tenant, delta.seq)] = bytes(blob)
            self._sync.marks[tenant] = adopted_watermark([d for d, _ in ordered])
            return len(ordered)

