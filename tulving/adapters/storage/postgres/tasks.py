"""Enrichment tasks of the PostgreSQL store (``ports.storage.EnrichmentTasks``): a table
every replica shares; a claim is one ``UPDATE`` over ``FOR UPDATE SKIP LOCKED`` rows, so
workers on many machines take disjoint tasks without waiting for each other, and a
finish is a ``DELETE ... RETURNING`` in the transaction that writes the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from tulving.adapters.storage.postgres.connection import Conn, PgConnections, translate_errors
from tulving.domain.enrichment import TaskBacklog, TaskFailure, backlog_of

_CLAIMABLE = ("kind = %s AND failed_at IS NULL"
              " AND (claimed_until IS NULL OR claimed_until < %s)")


class PostgresTasks(PgConnections):
    @translate_errors
    def add_tasks(self, kind: str, targets: Sequence[str], at: datetime) -> int:
        unique = list(dict.fromkeys(targets))
        if not unique:
            return 0

        def work(conn: Conn) -> int:
            rows = conn.execute(
                "INSERT INTO enrichment_tasks (kind, target, created_at)"
                " SELECT %s, t, %s FROM unnest(%s::text[]) AS t"
                " ON CONFLICT (kind, target) DO NOTHING RETURNING seq",
                (kind, at, unique)).fetchall()
            return len(rows)

        return self._atomic(work)

    @translate_errors
    def claim_tasks(self, kind: str, owner: str, now: datetime, until: datetime,
                    limit: int) -> list[str]:
        if limit <= 0:
            return []
        with self._autocommit() as conn:
            rows = conn.execute(
                "UPDATE enrichment_tasks SET claimed_by = %s, claimed_until = %s"
                f" WHERE seq IN (SELECT seq FROM enrichment_tasks WHERE {_CLAIMABLE}"
                " ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING seq, target",
                (owner, until, kind, now, limit)).fetchall()
        return [r["target"] for r in sorted(rows, key=lambda r: r["seq"])]

    @translate_errors
    def finish_tasks(self, kind: str, targets: Sequence[str], owner: str) -> list[str]:
        unique = list(dict.fromkeys(targets))

        def work(conn: Conn) -> list[str]:
            rows = conn.execute(
                "DELETE FROM enrichment_tasks WHERE kind = %s AND claimed_by = %s"
                " AND failed_at IS NULL AND target = ANY(%s::text[]) RETURNING target",
                (kind, owner, unique)).fetchall()
            return [r["target"] for r in rows]

        done = set(self._atomic(work))
        return [t for t in unique if t in done]

    @translate_errors
    def release_tasks(self, kind: str, targets: Sequence[str], owner: str, at: datetime,
                      *, error: str | None = None, give_up_after: int = 3) -> None:
        unique = list(dict.fromkeys(targets))
        with self._autocommit() as conn:
            if error is None:
                conn.execute(
                    "UPDATE enrichment_tasks SET claimed_by = NULL, claimed_until = NULL"
                    " WHERE kind = %s AND claimed_by = %s AND target = ANY(%s::text[])",
                    (kind, owner, unique))
                return
            conn.execute(
                "UPDATE enrichment_tasks SET claimed_by = NULL, claimed_until = NULL,"
                " attempts = attempts + 1, error = %s,"
                " failed_at = CASE WHEN attempts + 1 >= %s THEN %s::timestamptz END"
                " WHERE kind = %s AND claimed_by = %s AND failed_at IS NULL"
                " AND target = ANY(%s::text[])",
                (error, give_up_after, at, kind, owner, unique))

    @translate_errors
    def clear_leases(self) -> int:
        with self._autocommit() as conn:
            cur = conn.execute(
                "UPDATE enrichment_tasks SET claimed_by = NULL, claimed_until = NULL"
                " WHERE claimed_by IS NOT NULL")
            return int(cur.rowcount)

    @translate_errors
    def task_backlog(self, now: datetime) -> Mapping[str, TaskBacklog]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT kind,"
                " count(*) FILTER (WHERE failed_at IS NULL AND (claimed_until IS NULL"
                "   OR claimed_until < %s)) AS pending,"
                " count(*) FILTER (WHERE failed_at IS NULL AND claimed_until >= %s) AS running,"
                " count(*) FILTER (WHERE failed_at IS NOT NULL) AS failed"
                " FROM enrichment_tasks GROUP BY kind", (now, now)).fetchall()
        return backlog_of([(r["kind"], r["pending"], r["running"], r["failed"]) for r in rows])

    @translate_errors
    def failed_tasks(self, limit: int = 100) -> list[TaskFailure]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT kind, target, attempts, error, failed_at FROM enrichment_tasks"
                " WHERE failed_at IS NOT NULL ORDER BY seq LIMIT %s", (limit,)).fetchall()
        return [TaskFailure(r["kind"], r["target"], int(r["attempts"]), r["error"] or "",
                            r["failed_at"]) for r in rows]

    @translate_errors
    def retry_failed_tasks(self, kind: str | None = None) -> int:
        with self._autocommit() as conn:
            cur = conn.execute(
                "UPDATE enrichment_tasks SET failed_at = NULL, error = NULL, attempts = 0"
                " WHERE failed_at IS NOT NULL AND (%s::text IS NULL OR kind = %s)",
                (kind, kind))
            return int(cur.rowcount)
