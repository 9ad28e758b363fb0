"""Versioned migrations of the SQLite store.

Each migration is a list of statements applied in one transaction; ``meta.schema_version``
records the last one applied. Append new migrations; never edit an applied one.
"""

from __future__ import annotations

MIGRATIONS: list[list[str]] = [
    # 1: entries, tags, vectors, full text, meta, sessions, audit, jobs
    [
        "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE entries (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            type TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            partition TEXT NOT NULL,
            scope TEXT NOT NULL,
            user_id TEXT, workspace_id TEXT,
            key TEXT,
            importance REAL NOT NULL,
            pinned INTEGER NOT NULL,
            confidence REAL NOT NULL,
            source_type TEXT NOT NULL, source_instance TEXT, model_id TEXT,
            trust REAL NOT NULL,
            session_id TEXT, supersedes TEXT, superseded_by TEXT,
            related_to TEXT NOT NULL DEFAULT '[]',
            source_entry_ids TEXT NOT NULL DEFAULT '[]',
            conflict_ids TEXT NOT NULL DEFAULT '[]',
            review_status TEXT NOT NULL DEFAULT 'none',
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
            valid_from TEXT NOT NULL, valid_until TEXT, expired_at TEXT,
            last_accessed_at TEXT NOT NULL, access_count INTEGER NOT NULL DEFAULT 0,
            archived_at TEXT, archive_reason TEXT,
            entity TEXT, attribute TEXT, value TEXT,
            success_count INTEGER NOT NULL DEFAULT 0,
            failure_count INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}',
            content_hash TEXT NOT NULL,
            signature TEXT,
            search_text TEXT NOT NULL
        )""",
        """CREATE UNIQUE INDEX entries_active_key ON entries(partition, key)
            WHERE archived_at IS NULL AND key IS NOT NULL""",
        "CREATE INDEX entries_partition ON entries(partition, archived_at, id)",
        "CREATE INDEX entries_valid_from ON entries(valid_from)",
        "CREATE INDEX entries_session ON entries(session_id) WHERE session_id IS NOT NULL",
        "CREATE INDEX entries_fact ON entries(entity, attribute) WHERE entity IS NOT NULL",
        "CREATE INDEX entries_hash ON entries(content_hash)",
        """CREATE TABLE entry_tags (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (entry_id, tag)) WITHOUT ROWID""",
        "CREATE INDEX entry_tags_tag ON entry_tags(tag, entry_id)",
        """CREATE TABLE embeddings (
            entry_id TEXT PRIMARY KEY REFERENCES entries(id) ON DELETE CASCADE,
            vector BLOB NOT NULL) WITHOUT ROWID""",
        """CREATE VIRTUAL TABLE entries_fts USING fts5(
            search_text, content='entries', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2')""",
        """CREATE TRIGGER entries_fts_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts(rowid, search_text) VALUES (new.rowid, new.search_text);
        END""",
        """CREATE TRIGGER entries_fts_ad AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, search_text)
            VALUES ('delete', old.rowid, old.search_text);
        END""",
        """CREATE TRIGGER entries_fts_au AFTER UPDATE OF search_text ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, search_text)
            VALUES ('delete', old.rowid, old.search_text);
            INSERT INTO entries_fts(rowid, search_text) VALUES (new.rowid, new.search_text);
        END""",
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, tenant TEXT NOT NULL,
            started_at TEXT NOT NULL, last_activity_at TEXT NOT NULL, goal TEXT,
            ended_at TEXT, end_reason TEXT, summary_id TEXT, implicit INTEGER NOT NULL)""",
        "CREATE INDEX sessions_open ON sessions(agent_id, tenant) WHERE ended_at IS NULL",
        """CREATE TABLE audit_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, at TEXT NOT NULL,
            actor TEXT NOT NULL, action TEXT NOT NULL, entry_id TEXT,
            input_hash TEXT NOT NULL, details TEXT NOT NULL,
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""",
        "CREATE INDEX audit_tenant ON audit_log(tenant, seq)",
        """CREATE TABLE jobs (
            id TEXT PRIMARY KEY, kind TEXT NOT NULL, payload TEXT NOT NULL,
            created_at TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL,
            idempotency_key TEXT UNIQUE, error TEXT)""",
    ],
    # 2: neighbours in write order within one event time (Storage.adjacent)
    [
        "CREATE INDEX entries_event_order ON entries(valid_from, id)",
        "DROP INDEX entries_valid_from",
    ],
    # 3: vectors in a rowid table. In a WITHOUT ROWID table a row keeps at most ~1 KB on
    # its page, so every 1.5 KB float32 vector (384-d) spilled into an overflow page of its
    # own: 4,682 bytes per vector at 10k. A rowid table keeps ~4 KB on a leaf page, two
    # vectors a page (measured by benchmarks/footprint.py). One transaction: a crash leaves
    # the old table whole and the migration runs again at the next open.
    [
        """CREATE TABLE embeddings_rowid (
            entry_id TEXT NOT NULL UNIQUE REFERENCES entries(id) ON DELETE CASCADE,
            vector BLOB NOT NULL)""",
        "INSERT INTO embeddings_rowid(entry_id, vector) SELECT entry_id, vector FROM embeddings",
        "DROP TABLE embeddings",
        "ALTER TABLE embeddings_rowid RENAME TO embeddings",
    ],
    # 4: the server's sync log in the store (tulving.ports.storage.SyncLog): one row per
    # tenant with its last sequence number and merge watermark, one per delta with its
    # bytes (a rowid table: deltas are large). A retried push finds its delta by
    # (tenant, device, delta_id).
    [
        """CREATE TABLE sync_tenants (
            tenant TEXT PRIMARY KEY,
            last_seq INTEGER NOT NULL DEFAULT 0,
            merged_seq INTEGER NOT NULL DEFAULT 0)""",
        """CREATE TABLE sync_deltas (
            tenant TEXT NOT NULL, seq INTEGER NOT NULL, device TEXT NOT NULL,
            delta_id TEXT NOT NULL, size INTEGER NOT NULL, e2e INTEGER NOT NULL,
            pushed_at TEXT NOT NULL, state TEXT NOT NULL, reason TEXT, data BLOB NOT NULL,
            UNIQUE (tenant, seq), UNIQUE (tenant, device, delta_id))""",
        """CREATE INDEX sync_deltas_quarantined ON sync_deltas(tenant, seq)
            WHERE state = 'quarantined'""",
    ],
    # 5: state that every process of one memory agrees on (DESIGN.md, "The seams").
    # Sessions: at most one open implicit and one open explicit session per (agent,
    # tenant), so the store decides which session a write joins (older duplicates, from
    # processes that each kept their own, are ended as abandoned first). Jobs: a lease
    # (who prepares a job, until when). Bearer tokens: rows created and revoked in one
    # statement each, inside the store (so an encrypted store keeps them encrypted); a
    # registry kept in the meta table moves here.
    [
        """UPDATE sessions SET ended_at = last_activity_at, end_reason = 'abandoned'
            WHERE ended_at IS NULL AND EXISTS (
                SELECT 1 FROM sessions o WHERE o.agent_id = sessions.agent_id
                AND o.tenant = sessions.tenant AND o.implicit = sessions.implicit
                AND o.ended_at IS NULL AND (o.started_at > sessions.started_at
                    OR (o.started_at = sessions.started_at AND o.id > sessions.id)))""",
        """CREATE UNIQUE INDEX sessions_one_open ON sessions(agent_id, tenant, implicit)
            WHERE ended_at IS NULL""",
        "ALTER TABLE jobs ADD COLUMN claimed_by TEXT",
        "ALTER TABLE jobs ADD COLUMN claimed_until TEXT",
        """CREATE TABLE tokens (
            id TEXT PRIMARY KEY, name TEXT NOT NULL, salt TEXT NOT NULL,
            digest TEXT NOT NULL, created_at TEXT NOT NULL, user_id TEXT,
            workspace_id TEXT, agent_id TEXT, read_only INTEGER NOT NULL DEFAULT 0,
            revoked_at TEXT)""",
        "CREATE UNIQUE INDEX tokens_live_name ON tokens(name) WHERE revoked_at IS NULL",
        """INSERT OR IGNORE INTO tokens(id, name, salt, digest, created_at, user_id,
                workspace_id, agent_id, read_only)
            SELECT json_extract(j.value, '$.id'), json_extract(j.value, '$.name'),
                json_extract(j.value, '$.salt'), json_extract(j.value, '$.digest'),
                json_extract(j.value, '$.created_at'), json_extract(j.value, '$.user_id'),
                json_extract(j.value, '$.workspace_id'), json_extract(j.value, '$.agent_id'),
                coalesce(json_extract(j.value, '$.read_only'), 0)
            FROM meta, json_each(CASE WHEN meta.name = 'mcp_tokens' AND json_valid(meta.value)
                                      THEN meta.value ELSE '[]' END) AS j
            WHERE meta.name = 'mcp_tokens'""",
        "DELETE FROM meta WHERE name = 'mcp_tokens'",
    ],
    # 6: a log of changes to what the vector index must hold, so an index cache (or a
    # reader in another process) catches up from the position it was saved at instead of
    # reading every stored vector: a row for each vector written, replaced or deleted and
    # for each entry archived or brought back. Rows only name the entry; the reader looks
    # at its current state. The writer trims what its saved cache no longer needs.
    [
        "CREATE TABLE vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, entry_id TEXT NOT NULL)",
        """CREATE TRIGGER vector_log_ai AFTER INSERT ON embeddings BEGIN
            INSERT INTO vector_log(entry_id) VALUES (new.entry_id);
        END""",
        """CREATE TRIGGER vector_log_au AFTER UPDATE ON embeddings BEGIN
            INSERT INTO vector_log(entry_id) VALUES (new.entry_id);
        END""",
        """CREATE TRIGGER vector_log_ad AFTER DELETE ON embeddings BEGIN
            INSERT INTO vector_log(entry_id) VALUES (old.entry_id);
        END""",
        """CREATE TRIGGER vector_log_archive AFTER UPDATE OF archived_at ON entries
            WHEN (old.archived_at IS NULL) <> (new.archived_at IS NULL) BEGIN
            INSERT INTO vector_log(entry_id) VALUES (new.id);
        END""",
    ],
    # 7: enrichment tasks (tulving.ports.storage.EnrichmentTasks): the work derived from
    # a write (vectors it deferred, a stronger encoder's vectors, extraction, summaries),
    # queued in the write's own transaction and claimed by a background worker with a
    # lease; a row goes when its result is written, in the same transaction.
    [
        """CREATE TABLE enrichment_tasks (
            seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL,
            created_at TEXT NOT NULL, claimed_by TEXT, claimed_until TEXT,
            attempts INTEGER NOT NULL DEFAULT 0, failed_at TEXT, error TEXT,
            UNIQUE (kind, target))""",
        """CREATE INDEX enrichment_tasks_open ON enrichment_tasks(kind, seq)
            WHERE failed_at IS NULL""",
    ],
    # strong vectors: the strong tier's vectors beside the fast ones
    # (``ports.storage.StrongVectors``), keyed by entry and model, with the content hash
    # they were computed from (a changed content makes its vector stale, not wrong).
    [
        """CREATE TABLE strong_embeddings (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            model TEXT NOT NULL, content_hash TEXT NOT NULL, vector BLOB NOT NULL,
            PRIMARY KEY (entry_id, model)) WITHOUT ROWID""",
    ],
]
