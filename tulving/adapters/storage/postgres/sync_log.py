"""The sync log of the PostgreSQL store (``tulving.ports.storage.SyncLog``), shared by
every server replica over the database.

Schema migration 3: ``sync_tenants`` (a row per tenant: last sequence number, merge
watermark) and ``sync_deltas`` (the deltas with their bytes). An append locks its
tenant's row (``SELECT ... FOR UPDATE``), looks for the same push, then takes the next
number: appends of one tenant are serialised until commit, so numbers are distinct,
have no gaps and become visible in order, and a push retried on another replica finds
the first one. A merger claims its tenant with a session advisory lock keyed by
(schema, tenant): a second claimer, on any machine, waits until the first lets go and
then reads the watermark the first moved.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg

from tulving.adapters.storage.postgres.connection import Conn, PgConnections, translate_errors
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
    return SyncDelta(int(row["seq"]), row["device"], row["delta_id"], int(row["size"]),
                     bool(row["e2e"]), row["pushed_at"], row["state"], row["reason"])


class PostgresSyncLog(PgConnections):
    @translate_errors
    def sync_append(self, tenant: str, device: str, data: bytes, *, e2e: bool,
                    at: datetime) -> tuple[SyncDelta, bool]:
        check_sync_device(device)
        delta_id = hashlib.sha256(data).hexdigest()

        def work(conn: Conn) -> tuple[SyncDelta, bool]:
            conn.execute("INSERT INTO sync_tenants (tenant) VALUES (%s) ON CONFLICT DO NOTHING",
                         (tenant,))
            head = conn.execute("SELECT last_seq FROM sync_tenants WHERE tenant = %s "
                                "FOR UPDATE", (tenant,)).fetchone()
            assert head is not None
            found = self._find(conn, tenant, device, delta_id)
            if found is not None:
                return found, False
            delta = SyncDelta(int(head["last_seq"]) + 1, device, delta_id, len(data),
                              bool(e2e), at, DELTA_STORED if e2e else DELTA_PENDING)
            conn.execute("UPDATE sync_tenants SET last_seq = %s WHERE tenant = %s",
                         (delta.seq, tenant))
            conn.execute(
                "INSERT INTO sync_deltas (tenant, seq, device, delta_id, size, e2e, pushed_at,"
                " state, reason, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, NULL, %s)",
                (tenant, delta.seq, device, delta_id, delta.size, delta.e2e, at, delta.state,
                 bytes(data)))
            return delta, True

        return self._atomic(work)

    @staticmethod
    def _find(conn: Conn, tenant: str, device: str, delta_id: str) -> SyncDelta | None:
        row = conn.execute(f"SELECT {_COLUMNS} FROM sync_deltas WHERE tenant = %s AND "
                           "device = %s AND delta_id = %s", (tenant, device, delta_id)).fetchone()
        return _delta(row) if row else None

    @translate_errors
    def sync_find(self, tenant: str, device: str, delta_id: str) -> SyncDelta | None:
        with self._read() as conn:
            return self._find(conn, tenant, device, delta_id)

    @translate_errors
    def sync_deltas(self, tenant: str, after: int, limit: int, *, upto: int | None = None,
                    states: Sequence[str] | None = None,
                    device: str | None = None) -> list[SyncDelta]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sync_deltas WHERE tenant = %s AND seq > %s"
                " AND (%s::bigint IS NULL OR seq <= %s)"
                " AND (%s::text[] IS NULL OR state = ANY(%s::text[]))"
                " AND (%s::text IS NULL OR device = %s) ORDER BY seq LIMIT %s",
                (tenant, int(after), upto, upto, list(states) if states is not None else None,
                 list(states) if states is not None else None, device, device,
                 max(0, int(limit)))).fetchall()
        return [_delta(r) for r in rows]

    @translate_errors
    def sync_read(self, tenant: str, seq: int) -> bytes | None:
        with self._read() as conn:
            row = conn.execute("SELECT data FROM sync_deltas WHERE tenant = %s AND seq = %s",
                               (tenant, int(seq))).fetchone()
        return bytes(row["data"]) if row else None

    def _head(self, tenant: str) -> tuple[int, int]:
        with self._read() as conn:
            row = conn.execute("SELECT last_seq, merged_seq FROM sync_tenants WHERE tenant = %s",
                               (tenant,)).fetchone()
        return (int(row["last_seq"]), int(row["merged_seq"])) if row else (0, 0)

    @translate_errors
    def sync_last(self, tenant: str) -> int:
        return self._head(tenant)[0]

    @translate_errors
    def sync_watermark(self, tenant: str) -> int:
        return self._head(tenant)[1]

    @contextmanager
    def sync_merger(self, tenant: str) -> Iterator[int]:
        """A session advisory lock keyed by (schema, tenant) on a connection of its own
        (never one of the pool's: a merger needs pooled connections for its work while
        it holds the claim), after a lock of this process per tenant, so threads of one
        replica queue here instead of each opening a connection."""
        with self._merge_locks().held(tenant):
            try:
                conn = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                raise StorageError(f"PostgreSQL error: {exc}") from exc
            try:
                try:
                    self._set_search_path(conn)
                    conn.execute("SELECT pg_advisory_lock(hashtextextended("
                                 "'tulving-sync:' || current_schema() || chr(31) || %s, 0))",
                                 (tenant,))
                except psycopg.Error as exc:
                    raise StorageError(f"PostgreSQL error: {exc}") from exc
                yield self.sync_watermark(tenant)
            finally:
                conn.close()  # ends the session: the lock goes with it

    def _merge_locks(self) -> TenantLocks:
        locks: TenantLocks | None = getattr(self, "_sync_merge_locks", None)
        if locks is None:
            with self._open_lock:
                locks = getattr(self, "_sync_merge_locks", None)
                if locks is None:
                    locks = self._sync_merge_locks = TenantLocks()
        return locks

    @translate_errors
    def sync_settle(self, tenant: str, seq: int, state: str,
                    reason: str | None = None) -> None:
        check_sync_state(state)

        def work(conn: Conn) -> None:
            head = conn.execute("SELECT merged_seq FROM sync_tenants WHERE tenant = %s "
                                "FOR UPDATE", (tenant,)).fetchone()
            mark = int(head["merged_seq"]) if head else 0
            row = conn.execute("SELECT min(seq) AS next FROM sync_deltas WHERE tenant = %s "
                               "AND seq > %s", (tenant, mark)).fetchone()
            if row is None or row["next"] is None or int(row["next"]) != int(seq):
                raise StorageError(f"delta {seq} is not the next to settle (watermark {mark})")
            conn.execute("UPDATE sync_deltas SET state = %s, reason = %s WHERE tenant = %s "
                         "AND seq = %s", (state, reason, tenant, int(seq)))
            conn.execute("UPDATE sync_tenants SET merged_seq = %s WHERE tenant = %s",
                         (int(seq), tenant))

        self._atomic(work)

    @translate_errors
    def sync_adopt(self, tenant: str, deltas: Sequence[SyncDelta],
                   data: Sequence[bytes]) -> int:
        ordered = checked_adoption(deltas, data)

        def work(conn: Conn) -> int:
            conn.execute("INSERT INTO sync_tenants (tenant) VALUES (%s) ON CONFLICT DO NOTHING",
                         (tenant,))
            head = conn.execute("SELECT last_seq FROM sync_tenants WHERE tenant = %s "
                                "FOR UPDATE", (tenant,)).fetchone()
            if head is not None and int(head["last_seq"]):
                return 0
            if not ordered:
                return 0
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO sync_deltas (tenant, seq, device, delta_id, size, e2e,"
                    " pushed_at, state, reason, data)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(tenant, d.seq, d.device, d.delta_id, len(blob), d.e2e, d.pushed_at,
                      d.state, d.reason, bytes(blob)) for d, blob in ordered])
            conn.execute("UPDATE sync_tenants SET last_seq = %s, merged_seq = %s "
                         "WHERE tenant = %s",
                         (ordered[-1][0].seq, adopted_watermark([d for d, _ in ordered]), tenant))
            return len(ordered)

        return self._atomic(work)
