"""The PostgreSQL storage adapter: one memory shared by many agents on many machines.

Assembled from small mixins (connections, entries, vectors, records, the sync log,
enrichment tasks); this module adds the engine-level figures and upkeep. See ``entries`` for the concurrency rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg import errors

from tulving.adapters.storage.postgres.connection import translate_errors
from tulving.adapters.storage.postgres.planned import PlannedMixin
from tulving.adapters.storage.postgres.schema import SCHEMA_VERSION
from tulving.adapters.storage.postgres.strong import PostgresStrongVectors
from tulving.adapters.storage.postgres.sync_log import PostgresSyncLog
from tulving.adapters.storage.postgres.tasks import PostgresTasks
from tulving.domain.errors import ConfigError
from tulving.domain.identity import tenant_key
from tulving.ports.storage import StorageCapabilities
from tulving.ports.storage_base import StorageBase

_TABLES = ("entries", "entry_tags", "embeddings", "sessions", "audit_log", "jobs", "meta",
           "sync_tenants", "sync_deltas", "tokens", "enrichment_tasks")

_INTEGRITY_CHECKS = {
    "duplicate active keys": """SELECT count(*) FROM (SELECT partition, key FROM entries
        WHERE archived_at IS NULL AND key IS NOT NULL GROUP BY partition, key
        HAVING count(*) > 1) d""",
    "tags of missing entries": """SELECT count(*) FROM entry_tags t
        WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.id = t.entry_id)""",
    "superseded entries without a successor": """SELECT count(*) FROM entries
        WHERE archive_reason = 'superseded' AND superseded_by IS NULL""",
    "active entries marked superseded": """SELECT count(*) FROM entries
        WHERE archived_at IS NULL AND archive_reason IS NOT NULL""",
}


class PostgresStorage(PlannedMixin, PostgresStrongVectors, PostgresSyncLog, PostgresTasks,
                      StorageBase):
    name = "postgres"
    capabilities = StorageCapabilities(
        persistent=True, multi_process_writers=True, native_vectors=True
    )

    @property
    def schema(self) -> str | None:
        return self._schema

    @translate_errors
    def active_entries_by_tenant(self) -> Mapping[str, int]:
        """``EntryCensus``: one grouped count over the active entries (the metrics'
        ``tulving_tenant_entries``)."""
        with self._read() as conn:
            rows = conn.execute(
                """SELECT user_id, workspace_id, count(*) AS n FROM entries
                   WHERE archived_at IS NULL GROUP BY user_id, workspace_id""").fetchall()
        return {tenant_key(r["user_id"], r["workspace_id"]): int(r["n"]) for r in rows}

    @translate_errors
    def stats(self) -> Mapping[str, Any]:
        with self._read() as conn:
            row = conn.execute(
                """SELECT current_setting('server_version') AS server_version,
                       current_schema() AS schema,
                       pg_database_size(current_database()) AS database_bytes,
                       (SELECT count(*) FROM entries) AS entries,
                       (SELECT count(*) FROM entries WHERE archived_at IS NULL) AS active_entries,
                       (SELECT count(*) FROM embeddings) AS vectors,
                       (SELECT count(*) FROM sessions) AS sessions,
                       (SELECT count(*) FROM audit_log) AS audit_records,
                       (SELECT count(*) FROM jobs WHERE status = 'pending') AS pending_jobs,
                       (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)
                          FROM pg_class c WHERE c.oid = ANY(%s::regclass[])) AS store_bytes""",
                (list(_TABLES),),
            ).fetchone()
        assert row is not None
        out: dict[str, Any] = {
            "engine": "postgresql",
            "location": self.location,
            "schema_version": SCHEMA_VERSION,
        }
        out.update({k: (int(v) if isinstance(v, int) else v) for k, v in row.items()})
        out["rows"] = out["entries"]
        out["bytes"] = out["store_bytes"]
        out["vector_dimension"] = self.vector_dimension()
        return out

    @translate_errors
    def maintenance(self, action: str) -> Mapping[str, Any]:
        if action == "vacuum":
            # VACUUM cannot run in a transaction; FULL rewrites the tables, so the bytes
            # of deleted rows leave the files too (not only the visibility map).
            with self.pool.connection() as conn:
                for table in _TABLES:
                    conn.execute(f"VACUUM (FULL, ANALYZE) {table}")
            return {"action": "vacuum", "ok": True}
        if action == "checkpoint":
            with self.pool.connection() as conn:
                try:
                    conn.execute("CHECKPOINT")
                except errors.InsufficientPrivilege:
                    return {
                        "action": "checkpoint",
                        "ok": True,
                        "skipped": "CHECKPOINT needs superuser or pg_checkpoint; the "
                        "server checkpoints on its own schedule",
                    }
            return {"action": "checkpoint", "ok": True}
        if action == "integrity":
            problems: list[str] = []
            with self._read() as conn:
                for label, query in _INTEGRITY_CHECKS.items():
                    row = conn.execute(query).fetchone()
                    n = int(next(iter(row.values()))) if row else 0
                    if n:
                        problems.append(f"{n} {label}")
            return {"action": "integrity", "ok": not problems, "problems": problems}
        raise ConfigError(
            f"unknown maintenance action {action!r}; expected vacuum, checkpoint or integrity"
        )
