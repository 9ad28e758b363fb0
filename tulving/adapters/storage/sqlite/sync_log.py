"""The sync log of the SQLite store (``tulving.ports.storage.SyncLog``).

Two tables (schema migration 4): ``sync_tenants`` holds each tenant's last sequence
number and merge watermark, ``sync_deltas`` the deltas with their bytes. A number is
taken by ``UPDATE ... SET last_seq = last_seq + 1 RETURNING`` inside the append's
transaction, and SQLite runs one write transaction at a time (``BEGIN IMMEDIATE``; a
second process is refused by the writer lock), so appends get distinct numbers in commit
order. The merge claim is a lock per tenant of this process: the writer lock
leaves no other process to merge. With SQLCipher the deltas are
encrypted with the rest of the store.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from tulving.adapters.storage.rows import parse_ts, ts
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

_COLUMNS = "seq, device, delta_id, size, e2e, pushed_at, state, reason"


def _delta(row: Any) -> SyncDelta:
    at = parse_ts(row[5])
    assert at is not None
    return SyncDelta(int(row[0]), str(row[1]), str(row[2]), int(row[3]), bool(row[4]), at,
                     str(row[6]), row[7])


class SQLiteSyncLog:
    """Needs the store's ``transaction()``, ``_c`` and ``_fetch``."""

    transaction: Any
    _c: sqlite3.Connection
    _fetch: Any
    _merge_locks: TenantLocks

    def sync_append(self, tenant: str, device: str, data: bytes, *, e2e: bool,
                    at: datetime) -> tuple[SyncDelta, bool]:
        check_sync_device(device)
        delta_id = hashlib.sha256(data).hexdigest()
        with self.transaction():
            found = self.sync_find(tenant, device, delta_id)
            if found is not None:
                return found, False
            conn = self._c
            conn.execute("INSERT INTO sync_tenants(tenant) VALUES (?) ON CONFLICT DO NOTHING",
                         (tenant,))
            row = conn.execute("UPDATE sync_tenants SET last_seq = last_seq + 1 "
                               "WHERE tenant = ? RETURNING last_seq", (tenant,)).fetchone()
            delta = SyncDelta(int(row[0]), device, delta_id, len(data), bool(e2e), at,
                              DELTA_STORED if e2e else DELTA_PENDING)
            conn.execute(
                "INSERT INTO sync_deltas(tenant, seq, device, delta_id, size, e2e, pushed_at,"
                " state, reason, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
                (tenant, delta.seq, device, delta_id, delta.size, int(delta.e2e), ts(at),
                 delta.state, bytes(data)))
            return delta, True

    def sync_find(self, tenant: str, device: str, delta_id: str) -> SyncDelta | None:
        rows = self._fetch(f"SELECT {_COLUMNS} FROM sync_deltas WHERE tenant = ? AND device = ?"
                           " AND delta_id = ?", (tenant, device, delta_id))
        return _delta(rows[0]) if rows else None

    def sync_deltas(self, tenant: str, after: int, limit: int, *, upto: int | None = None,
                    states: Sequence[str] | None = None,
                    device: str | None = None) -> list[SyncDelta]:
        sql = f"SELECT {_COLUMNS} FROM sync_deltas WHERE tenant = ? AND seq > ?"
        params: list[Any] = [tenant, int(after)]
        if upto is not None:
            sql += " AND seq <= ?"
            params.append(int(upto))
        if states is not None:
            sql += f" AND state IN ({', '.join('?' * len(states))})"
            params.extend(states)
        if device is not None:
            sql += " AND device = ?"
            params.append(device)
        sql += " ORDER BY seq LIMIT ?"
        params.append(max(0, int(limit)))
        return [_delta(r) for r in self._fetch(sql, params)]

    def sync_read(self, tenant: str, seq: int) -> bytes | None:
        rows = self._fetch("SELECT data FROM sync_deltas WHERE tenant = ? AND seq = ?",
                           (tenant, int(seq)))
        return bytes(rows[0][0]) if rows else None

    def _sync_head(self, tenant: str) -> tuple[int, int]:
        rows = self._fetch("SELECT last_seq, merged_seq FROM sync_tenants WHERE tenant = ?",
                           (tenant,))
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def sync_last(self, tenant: str) -> int:
        return self._sync_head(tenant)[0]

    def sync_watermark(self, tenant: str) -> int:
        return self._sync_head(tenant)[1]

    @contextmanager
    def sync_merger(self, tenant: str) -> Iterator[int]:
        with self._merge_locks.held(tenant):
            yield self.sync_watermark(tenant)

    def sync_settle(self, tenant: str, seq: int, state: str,
                    reason: str | None = None) -> None:
        check_sync_state(state)
        with self.transaction():
            conn = self._c
            mark = self.sync_watermark(tenant)
            row = conn.execute("SELECT min(seq) FROM sync_deltas WHERE tenant = ? AND seq > ?",
                               (tenant, mark)).fetchone()
            if row is None or row[0] is None or int(row[0]) != int(seq):
                raise StorageError(f"delta {seq} is not the next to settle (watermark {mark})")
            conn.execute("UPDATE sync_deltas SET state = ?, reason = ? WHERE tenant = ? "
                         "AND seq = ?", (state, reason, tenant, int(seq)))
            conn.execute("UPDATE sync_tenants SET merged_seq = ? WHERE tenant = ?",
                         (int(seq), tenant))

    def sync_adopt(self, tenant: str, deltas: Sequence[SyncDelta],
                   data: Sequence[bytes]) -> int:
        ordered = checked_adoption(deltas, data)
        with self.transaction():
            if self.sync_last(tenant):
                return 0
            conn = self._c
            for delta, blob in ordered:
                conn.execute(
                    "INSERT INTO sync_deltas(tenant, seq, device, delta_id, size, e2e,"
                    " pushed_at, state, reason, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (tenant, delta.seq, delta.device, delta.delta_id, len(blob),
                     int(delta.e2e), ts(delta.pushed_at), delta.state, delta.reason,
                     bytes(blob)))
            last = ordered[-1][0].seq if ordered else 0
            mark = adopted_watermark([d for d, _ in ordered])
            conn.execute("INSERT INTO sync_tenants(tenant, last_seq, merged_seq) VALUES (?, ?, ?)"
                         " ON CONFLICT(tenant) DO UPDATE SET last_seq = excluded.last_seq,"
                         " merged_seq = excluded.merged_seq", (tenant, last, mark))
            return len(ordered)
