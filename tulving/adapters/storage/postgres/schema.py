"""Versioned migrations of the PostgreSQL store.

Each migration is a list of statements applied in one transaction under an advisory lock
(so two processes opening a fresh database at once cannot both migrate); the meta row
``schema_version`` records the last one applied. Append new migrations; never edit an
applied one.

Design notes:
- ``id``, ``partition`` and ``key`` use the "C" collation so id order is creation order and
  prefix comparisons are byte-wise whatever the database's default collation is.
- Full text is a generated ``tsvector`` column (english config) with a GIN index: it is
  recomputed by PostgreSQL in the same row write, so FTS always follows entries exactly.
- ``embeddings.vector`` starts without a dimension; the first vector written fixes it
  (``ALTER ... TYPE vector(n)``), which the HNSW index needs. There is no foreign key to
  ``entries``: the pgvector index shares this table and may hold ids storage never saw
  (its contract suite adds bare ids); storage deletes vectors with their entries itself.
  ``indexed`` is the index's membership flag, so ``VectorIndex.remove`` never destroys
  the stored vector that storage treats as the source of truth. Storage keeps it equal
  to "the entry is active" (archive un-flags, unarchive flags), which is what the
  application expects the index to hold.
"""

from __future__ import annotations

MIGRATIONS: list[list[str]] = [
    # 1: entries, tags, vectors, full text, meta, sessions, audit, jobs
    [
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE entries (
            id TEXT COLLATE "C" PRIMARY KEY,
            content TEXT NOT NULL,
            type TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            partition TEXT COLLATE "C" NOT NULL,
            scope TEXT NOT NULL,
            user_id TEXT, workspace_id TEXT,
            key TEXT COLLATE "C",
            importance DOUBLE PRECISION NOT NULL,
            pinned BOOLEAN NOT NULL,
            confidence DOUBLE PRECISION NOT NULL,
            source_type TEXT NOT NULL, source_instance TEXT, model_id TEXT,
            trust DOUBLE PRECISION NOT NULL,
            session_id TEXT, supersedes TEXT, superseded_by TEXT,
            related_to TEXT NOT NULL DEFAULT '[]',
            source_entry_ids TEXT NOT NULL DEFAULT '[]',
            conflict_ids TEXT NOT NULL DEFAULT '[]',
            review_status TEXT NOT NULL DEFAULT 'none',
            created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
            valid_from TIMESTAMPTZ NOT NULL, valid_until TIMESTAMPTZ, expired_at TIMESTAMPTZ,
            last_accessed_at TIMESTAMPTZ NOT NULL, access_count BIGINT NOT NULL DEFAULT 0,
            archived_at TIMESTAMPTZ, archive_reason TEXT,
            entity TEXT, attribute TEXT, value TEXT,
            success_count BIGINT NOT NULL DEFAULT 0,
            failure_count BIGINT NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}',
            content_hash TEXT NOT NULL,
            signature TEXT,
            search_text TEXT NOT NULL,
            search_tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED
        )""",
        """CREATE UNIQUE INDEX entries_active_key ON entries(partition, key)
            WHERE archived_at IS NULL AND key IS NOT NULL""",
        "CREATE INDEX entries_partition ON entries(partition, id) WHERE archived_at IS NULL",
        "CREATE INDEX entries_partition_all ON entries(partition, id)",
        "CREATE INDEX entries_valid_from ON entries(valid_from)",
        "CREATE INDEX entries_session ON entries(session_id) WHERE session_id IS NOT NULL",
        "CREATE INDEX entries_fact ON entries(entity, attribute) WHERE entity IS NOT NULL",
        "CREATE INDEX entries_hash ON entries(content_hash)",
        "CREATE INDEX entries_fts ON entries USING GIN (search_tsv)",
        """CREATE TABLE entry_tags (
            entry_id TEXT COLLATE "C" NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            tag TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (entry_id, tag))""",
        "CREATE INDEX entry_tags_tag ON entry_tags(tag, entry_id)",
        """CREATE TABLE embeddings (
            entry_id TEXT COLLATE "C" PRIMARY KEY,
            vector vector NOT NULL,
            indexed BOOLEAN NOT NULL DEFAULT TRUE)""",
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, tenant TEXT NOT NULL,
            started_at TIMESTAMPTZ NOT NULL, last_activity_at TIMESTAMPTZ NOT NULL, goal TEXT,
            ended_at TIMESTAMPTZ, end_reason TEXT, summary_id TEXT, implicit BOOLEAN NOT NULL)""",
        "CREATE INDEX sessions_open ON sessions(agent_id, tenant) WHERE ended_at IS NULL",
        """CREATE TABLE audit_log (
            seq BIGSERIAL PRIMARY KEY, tenant TEXT NOT NULL, at TIMESTAMPTZ NOT NULL,
            actor TEXT NOT NULL, action TEXT NOT NULL, entry_id TEXT,
            input_hash TEXT NOT NULL, details TEXT NOT NULL,
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""",
        "CREATE INDEX audit_tenant ON audit_log(tenant, seq)",
        """CREATE TABLE jobs (
            id TEXT PRIMARY KEY, kind TEXT NOT NULL, payload TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL,
            idempotency_key TEXT UNIQUE, error TEXT)""",
        "CREATE INDEX jobs_pending ON jobs(kind, created_at, id) WHERE status = 'pending'",
    ],
    # 2: neighbours in write order within one event time (Storage.adjacent)
    [
        "CREATE INDEX entries_event_order ON entries(valid_from, id)",
        "DROP INDEX entries_valid_from",
    ],
    # 3: the server's sync log in the store (tulving.ports.storage.SyncLog), shared by
    # every replica: a row per tenant (last sequence number, merge watermark), one per
    # delta with its bytes; a retried push finds its delta by (tenant, device, delta_id).
    [
        """CREATE TABLE sync_tenants (
            tenant TEXT COLLATE "C" PRIMARY KEY,
            last_seq BIGINT NOT NULL DEFAULT 0,
            merged_seq BIGINT NOT NULL DEFAULT 0)""",
        """CREATE TABLE sync_deltas (
            tenant TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL, device TEXT NOT NULL,
            delta_id TEXT NOT NULL, size BIGINT NOT NULL, e2e BOOLEAN NOT NULL,
            pushed_at TIMESTAMPTZ NOT NULL, state TEXT NOT NULL, reason TEXT,
            data BYTEA NOT NULL,
            PRIMARY KEY (tenant, seq), UNIQUE (tenant, device, delta_id))""",
        """CREATE INDEX sync_deltas_quarantined ON sync_deltas(tenant, seq)
            WHERE state = 'quarantined'""",
    ],
    # 4: state that every replica agrees on (DESIGN.md, "The seams"). Sessions: at most
    # one open implicit and one open explicit session per (agent, tenant), so the store
    # decides which session a write joins whichever replica it reaches (older duplicates
    # are ended as abandoned first). Jobs: a lease (who prepares a job, until when).
    # Bearer tokens: rows created and revoked in one statement each (the JSON registry in
    # the meta table moves here).
    [
        """UPDATE sessions s SET ended_at = s.last_activity_at, end_reason = 'abandoned'
            WHERE s.ended_at IS NULL AND EXISTS (
                SELECT 1 FROM sessions o WHERE o.agent_id = s.agent_id
                AND o.tenant = s.tenant AND o.implicit = s.implicit
                AND o.ended_at IS NULL AND (o.started_at, o.id) > (s.started_at, s.id))""",
        """CREATE UNIQUE INDEX sessions_one_open ON sessions(agent_id, tenant, implicit)
            WHERE ended_at IS NULL""",
        "ALTER TABLE jobs ADD COLUMN claimed_by TEXT, ADD COLUMN claimed_until TIMESTAMPTZ",
        """CREATE TABLE tokens (
            id TEXT PRIMARY KEY, name TEXT NOT NULL, salt TEXT NOT NULL,
            digest TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, user_id TEXT,
            workspace_id TEXT, agent_id TEXT, read_only BOOLEAN NOT NULL DEFAULT FALSE,
            revoked_at TIMESTAMPTZ)""",
        "CREATE UNIQUE INDEX tokens_live_name ON tokens(name) WHERE revoked_at IS NULL",
        """INSERT INTO tokens (id, name, salt, digest, created_at, user_id, workspace_id,
                agent_id, read_only)
            SELECT r->>'id', r->>'name', r->>'salt', r->>'digest',
                (r->>'created_at')::timestamptz, r->>'user_id', r->>'workspace_id',
                r->>'agent_id', coalesce((r->>'read_only')::boolean, FALSE)
            FROM meta m CROSS JOIN LATERAL jsonb_array_elements(CASE
                WHEN m.name <> 'mcp_tokens' THEN NULL
                WHEN jsonb_typeof(m.value::jsonb) = 'array' THEN m.value::jsonb END) AS r
            WHERE m.name = 'mcp_tokens'
            ON CONFLICT DO NOTHING""",
        "DELETE FROM meta WHERE name = 'mcp_tokens'",
    ],
    # 5: short write locks. A tenant's writing transactions are counted in
    # ``tenant_writes`` (bumped under the tenant's write lock, so the count is the order
    # they committed in), and every entry row a writing transaction inserts or changes
    # is marked with that count in ``entry_writes`` (by statement triggers reading the
    # transaction-local setting ``tulving.write_seq`` that ``lock_tenant_writes`` sets;
    # a table of its own, so marking a row rewrites no entry and none of its indexes): a
    # writer that planned outside the lock reads, under it, only what was written since
    # the count it planned at. The audit chain is extended by one statement
    # (``tulving_append_audit``: the tenant lock, the head, the record hashed as
    # ``domain.audit_chain.record_hash`` hashes it, from the JSON of its fields after
    # ``prev_hash`` and ``seq``), and a plan made before the tenant's lock is checked
    # under it by one more (``tulving_unchanged_since``).
    [
        """CREATE TABLE tenant_writes (
            tenant TEXT COLLATE "C" PRIMARY KEY, seq BIGINT NOT NULL)""",
        """CREATE TABLE entry_writes (
            entry_id TEXT COLLATE "C" PRIMARY KEY, partition TEXT COLLATE "C" NOT NULL,
            write_seq BIGINT NOT NULL)""",
        "CREATE INDEX entry_writes_since ON entry_writes(partition, write_seq)",
        """CREATE FUNCTION tulving_mark_writes() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                seq TEXT := coalesce(current_setting('tulving.write_seq', true), '');
            BEGIN
                IF seq <> '' THEN
                    INSERT INTO entry_writes (entry_id, partition, write_seq)
                        SELECT c.id, c.partition, seq::bigint FROM changed c
                        ON CONFLICT (entry_id) DO UPDATE
                        SET write_seq = EXCLUDED.write_seq, partition = EXCLUDED.partition;
                END IF;
                RETURN NULL;
            END $$""",
        """CREATE TRIGGER entries_inserted AFTER INSERT ON entries
            REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
            EXECUTE FUNCTION tulving_mark_writes()""",
        """CREATE TRIGGER entries_updated AFTER UPDATE ON entries
            REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
            EXECUTE FUNCTION tulving_mark_writes()""",
        """CREATE FUNCTION tulving_append_audit(
                tenants TEXT[], ats TIMESTAMPTZ[], actors TEXT[], actions TEXT[],
                entry_ids TEXT[], input_hashes TEXT[], details TEXT[], rests TEXT[])
            RETURNS TABLE (r_seq BIGINT, r_prev TEXT, r_hash TEXT)
            LANGUAGE plpgsql AS $$
            DECLARE
                heads JSONB := '{}';
                head TEXT;
                s BIGINT;
                h TEXT;
            BEGIN
                PERFORM pg_advisory_xact_lock(k) FROM (SELECT DISTINCT hashtextextended(
                    'tulving-audit:' || current_schema() || chr(31) || u, 0) AS k
                    FROM unnest(tenants) AS u) AS locks ORDER BY k;
                FOR i IN 1 .. coalesce(array_length(tenants, 1), 0) LOOP
                    head := heads ->> tenants[i];
                    IF head IS NULL THEN
                        SELECT a.hash INTO head FROM audit_log a
                            WHERE a.tenant = tenants[i] ORDER BY a.seq DESC LIMIT 1;
                        head := coalesce(head, repeat('0', 64));
                    END IF;
                    s := nextval(pg_get_serial_sequence('audit_log', 'seq'));
                    h := encode(sha256(convert_to(
                        '["' || head || '",' || s::text || ',' || rests[i], 'UTF8')), 'hex');
                    INSERT INTO audit_log (seq, tenant, at, actor, action, entry_id,
                            input_hash, details, prev_hash, hash)
                        VALUES (s, tenants[i], ats[i], actors[i], actions[i], entry_ids[i],
                            input_hashes[i], details[i], head, h);
                    heads := heads || jsonb_build_object(tenants[i], h);
                    r_seq := s;
                    r_prev := head;
                    r_hash := h;
                    RETURN NEXT;
                END LOOP;
            END $$""",
        # The check of a write planned before its tenant's lock (``commit_planned``),
        # run under the lock: it fails (SQLSTATE TV001, nothing written) when a candidate
        # the plan read was written since the count it planned at, or is gone, or when
        # an entry written since could change the plan (same partition, and the same
        # text, the same fact, or a vector near enough to be a near duplicate).
        """CREATE FUNCTION tulving_unchanged_since(
                mark BIGINT, parts TEXT[], ids TEXT[], hashes TEXT[], entities TEXT[],
                attrs TEXT[], vecs TEXT[], near DOUBLE PRECISION)
            RETURNS VOID LANGUAGE plpgsql AS $$
            BEGIN
                IF (SELECT count(*) FROM entries e
                        LEFT JOIN entry_writes w ON w.entry_id = e.id
                        WHERE e.id = ANY(ids) AND coalesce(w.write_seq, 0) <= mark)
                        <> coalesce(array_length(ids, 1), 0) THEN
                    RAISE EXCEPTION 'tulving: a candidate of the plan changed'
                        USING ERRCODE = 'TV001';
                END IF;
                IF EXISTS (SELECT 1 FROM entry_writes w JOIN entries e ON e.id = w.entry_id
                        LEFT JOIN embeddings v ON v.entry_id = e.id AND v.indexed
                        WHERE w.partition = ANY(parts) AND w.write_seq > mark
                        AND e.archived_at IS NULL AND (
                            e.content_hash = ANY(hashes)
                            OR EXISTS (SELECT 1 FROM unnest(entities, attrs) AS f(en, at)
                                       WHERE e.entity = f.en AND e.attribute = f.at)
                            OR (v.vector IS NOT NULL AND EXISTS (
                                SELECT 1 FROM unnest(vecs) AS q(t)
                                WHERE 1 - (v.vector <=> q.t::vector) >= near)))) THEN
                    RAISE EXCEPTION 'tulving: an entry written since changes the plan'
                        USING ERRCODE = 'TV001';
                END IF;
            END $$""",
    ],
    # 6: enrichment tasks (tulving.ports.storage.EnrichmentTasks): the work derived from
    # a write, queued in the write's own transaction and claimed by the replicas'
    # background workers with a lease (FOR UPDATE SKIP LOCKED); a row goes when its result
    # is written, in the same transaction.
    [
        """CREATE TABLE enrichment_tasks (
            seq BIGSERIAL PRIMARY KEY, kind TEXT COLLATE "C" NOT NULL,
            target TEXT COLLATE "C" NOT NULL, created_at TIMESTAMPTZ NOT NULL,
            claimed_by TEXT, claimed_until TIMESTAMPTZ,
            attempts INTEGER NOT NULL DEFAULT 0, failed_at TIMESTAMPTZ, error TEXT,
            UNIQUE (kind, target))""",
        """CREATE INDEX enrichment_tasks_open ON enrichment_tasks(kind, seq)
            WHERE failed_at IS NULL""",
    ],
    # strong vectors: the strong tier's vectors beside the fast ones
    # (``ports.storage.StrongVectors``), keyed by entry and model, with the content hash
    # they were computed from; removed with their entry (``delete``).
    [
        """CREATE TABLE strong_embeddings (
            entry_id TEXT COLLATE "C" NOT NULL, model TEXT NOT NULL,
            content_hash TEXT NOT NULL, vector BYTEA NOT NULL,
            PRIMARY KEY (entry_id, model))""",
    ],
]


SCHEMA_VERSION = len(MIGRATIONS)
