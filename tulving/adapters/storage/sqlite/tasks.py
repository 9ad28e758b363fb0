"""Enrichment tasks of the SQLite store (``ports.storage.EnrichmentTasks``): a table in
the file, written in the caller's transaction, each claim one ``UPDATE ... RETURNING``.

A worker that finds nothing to do asks a reader connection first, so an idle worker's
polls never take the write lock (``BEGIN IMMEDIATE``) a writer may be waiting for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from tulving.adapters.storage.rows import ts
from tulving.adapters.storage.sqlite.connection import SQLiteConnections, _at, _chunks
from tulving.domain.enrichment import TaskBacklog, TaskFailure, backlog_of

_CLAIMABLE = ("kind = ? AND failed_at IS NULL"
              " AND (claimed_until IS NULL OR claimed_until < ?)")


class SQLiteTasks(SQLiteConnections):
    def add_tasks(self, kind: str, targets: Sequence[str], at: datetime) -> int:
        if not targets:
            return 0
        with self.transaction():
            before = self._c.total_changes
            self._c.executemany(
                "INSERT OR IGNORE INTO enrichment_tasks(kind, target, created_at)"
                " VALUES (?, ?, ?)", [(kind, t, ts(at)) for t in dict.fromkeys(targets)])
            return int(self._c.total_changes - before)

    def claim_tasks(self, kind: str, owner: str, now: datetime, until: datetime,
                    limit: int) -> list[str]:
        if limit <= 0 or not self._fetch(
                f"SELECT 1 FROM enrichment_tasks WHERE {_CLAIMABLE} LIMIT 1",
                (kind, ts(now))):
            return []
        with self.transaction():
            rows = self._c.execute(
                "UPDATE enrichment_tasks SET claimed_by = ?, claimed_until = ? WHERE seq IN"
                f" (SELECT seq FROM enrichment_tasks WHERE {_CLAIMABLE}"
                " ORDER BY seq LIMIT ?) RETURNING seq, target",
                (owner, ts(until), kind, ts(now), limit)).fetchall()
        return [r[1] for r in sorted(rows, key=lambda r: int(r[0]))]

    def finish_tasks(self, kind: str, targets: Sequence[str], owner: str) -> list[str]:
        done: list[str] = []
        with self.transaction():
            for chunk in _chunks(list(dict.fromkeys(targets)), 900):
                rows = self._c.execute(
                    "DELETE FROM enrichment_tasks WHERE kind = ? AND claimed_by = ?"
                    f" AND failed_at IS NULL AND target IN ({','.join('?' * len(chunk))})"
                    " RETURNING target", (kind, owner, *chunk)).fetchall()
                done.extend(r[0] for r in rows)
        wanted = {t: i for i, t in enumerate(targets)}
        return sorted(done, key=wanted.__getitem__)

    def release_tasks(self, kind: str, targets: Sequence[str], owner: str, at: datetime,
                      *, error: str | None = None, give_up_after: int = 3) -> None:
        with self.transaction():
            for chunk in _chunks(list(dict.fromkeys(targets)), 900):
                marks = ",".join("?" * len(chunk))
                if error is None:
                    self._c.execute(
                        "UPDATE enrichment_tasks SET claimed_by = NULL, claimed_until = NULL"
                        f" WHERE kind = ? AND claimed_by = ? AND target IN ({marks})",
                        (kind, owner, *chunk))
                    continue
                self._c.execute(
                    "UPDATE enrichment_tasks SET claimed_by = NULL, claimed_until = NULL,"
                    " attempts = attempts + 1, error = ?,"
                    " failed_at = CASE WHEN attempts + 1 >= ? THEN ? END"
                    " WHERE kind = ? AND claimed_by = ? AND failed_at IS NULL"
                    f" AND target IN ({marks})",
                    (error, give_up_after, ts(at), kind, owner, *chunk))

    def clear_leases(self) -> int:
        with self.transaction():
            cur = self._c.execute(
                "UPDATE enrichment_tasks SET claimed_by = NULL, claimed_until = NULL"
                " WHERE claimed_by IS NOT NULL")
            return int(cur.rowcount)

    def task_backlog(self, now: datetime) -> Mapping[str, TaskBacklog]:
        rows = self._fetch(
            "SELECT kind,"
            " count(CASE WHEN failed_at IS NULL AND (claimed_until IS NULL"
            "   OR claimed_until < ?) THEN 1 END),"
            " count(CASE WHEN failed_at IS NULL AND claimed_until >= ? THEN 1 END),"
            " count(failed_at)"
            " FROM enrichment_tasks GROUP BY kind", (ts(now), ts(now)))
        return backlog_of([(r[0], r[1], r[2], r[3]) for r in rows])

    def failed_tasks(self, limit: int = 100) -> list[TaskFailure]:
        rows = self._fetch(
            "SELECT kind, target, attempts, error, failed_at FROM enrichment_tasks"
            " WHERE failed_at IS NOT NULL ORDER BY seq LIMIT ?", (limit,))
        return [TaskFailure(r[0], r[1], int(r[2]), r[3] or "", _at(r[4])) for r in rows]

    def retry_failed_tasks(self, kind: str | None = None) -> int:
        with self.transaction():
            cur = self._c.execute(
                "UPDATE enrichment_tasks SET failed_at = NULL, error = NULL, attempts = 0"
                " WHERE failed_at IS NOT NULL AND (? IS NULL OR kind = ?)", (kind, kind))
            return int(cur.rowcount)
