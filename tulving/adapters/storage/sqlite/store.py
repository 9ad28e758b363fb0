"""SQLite storage: one file, WAL, FTS5, the embedded default.

Assembled from mixins by concern, as the PostgreSQL adapter is: connections and
lifecycle (:mod:`.connection`), entries (:mod:`.entries`), full-text search
(:mod:`.lexical`), vectors and their change log (:mod:`.vectors`), meta, sessions,
audit, jobs and tokens (:mod:`.records`), the sync log (:mod:`.sync_log`), enrichment
tasks (:mod:`.tasks`); this module adds the engine's figures and upkeep. Embedding BLOBs are the source of truth for
vectors; the vector index beside the file is a cache rebuilt from them.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from tulving.adapters.storage.sqlite.connection import MIRROR_FROM, VECTOR_FORMATS
from tulving.adapters.storage.sqlite.lexical import MIRROR_AFTER_QUERIES, LexicalMixin
from tulving.adapters.storage.sqlite.records import SQLiteRecords
from tulving.adapters.storage.sqlite.strong import SQLiteStrongVectors
from tulving.adapters.storage.sqlite.sync_log import SQLiteSyncLog
from tulving.adapters.storage.sqlite.tasks import SQLiteTasks
from tulving.adapters.storage.sqlite.vectors import SQLiteVectors
from tulving.domain.errors import ConfigError
from tulving.domain.identity import tenant_key
from tulving.ports.storage_base import StorageBase

__all__ = ["MIRROR_AFTER_QUERIES", "MIRROR_FROM", "VECTOR_FORMATS", "SQLiteStorage"]


class SQLiteStorage(SQLiteVectors, SQLiteStrongVectors, LexicalMixin, SQLiteRecords,
                    SQLiteSyncLog, SQLiteTasks, StorageBase):
    """The SQLite store (see the module docstring for its parts). A ``StorageBase`` whose
    engine does every method better in SQL: it overrides them all, so the core the base
    derives from (``insert``, ``add_audit``, ``put_job``, ...) is never asked of it."""

    name = "sqlite"

    def active_entries_by_tenant(self) -> Mapping[str, int]:
        """``EntryCensus``: one grouped count over the active entries (the metrics'
        ``tulving_tenant_entries``)."""
        rows = self._fetch("SELECT user_id, workspace_id, count(*) FROM entries"
                           " WHERE archived_at IS NULL GROUP BY user_id, workspace_id")
        return {tenant_key(r[0], r[1]): int(r[2]) for r in rows}

    def stats(self) -> Mapping[str, Any]:
        size = 0
        if self.path != ":memory:":
            for suffix in ("", "-wal", "-shm"):
                with suppress(OSError):
                    size += os.path.getsize(self.path + suffix)
        rows = self._fetch(
            "SELECT (SELECT count(*) FROM entries), (SELECT count(*) FROM embeddings),"
            " (SELECT count(*) FROM audit_log)"
        )[0]
        return {"engine": "sqlite", "path": self.path, "bytes": size, "rows": int(rows[0]),
                "vectors": int(rows[1]), "audit_records": int(rows[2]),
                "sqlite_version": sqlite3.sqlite_version}

    def maintenance(self, action: str) -> Mapping[str, Any]:
        if action != "integrity":
            self._refuse_write()
        with self._lock:
            if action == "vacuum":
                before = self.stats()["bytes"]
                self._c.execute("INSERT INTO entries_fts(entries_fts) VALUES ('optimize')")
                self._c.execute("VACUUM")
                self._c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                return {"action": "vacuum", "bytes_before": before, "bytes_after": self.stats()["bytes"]}
            if action == "checkpoint":
                row = self._c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                return {"action": "checkpoint", "result": list(row)}
            if action == "integrity":
                rows = self._c.execute("PRAGMA integrity_check").fetchall()
                if not self.read_only:  # FTS5's own check is an INSERT command
                    self._c.execute(
                        "INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
                return {"action": "integrity", "ok": rows[0][0] == "ok",
                        "messages": [r[0] for r in rows]}
        raise ConfigError(f"unknown maintenance action {action!r}: vacuum, checkpoint, integrity")
