"""Meta, sessions, the audit log, durable jobs and bearer tokens of the PostgreSQL store.

Audit appends of one tenant are serialised by a per-tenant advisory lock held until
commit: the next appender reads the committed predecessor, so writers on many machines
extend one chain instead of forking it. Tenants of a batch are locked in sorted order.
The same lock is the tenant's write lock (``lock_tenant_writes``), which a writing
transaction takes first: audit appends then never wait behind a lock order of their own.

Shared state is claimed in one statement each (DESIGN.md, "The seams"): a session is
opened by an insert the partial unique index ``sessions_one_open`` admits once per
(agent, tenant, kind) and ended by an ``UPDATE ... WHERE ended_at IS NULL``; a job's lease
by one conditional ``UPDATE``, and its completion under the row lock ``take_job`` holds;
a token by an insert ``tokens_live_name`` admits once per live name and a revocation by
one ``UPDATE``. Nothing is decided from a row read earlier.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from tulving.adapters.storage.postgres.connection import Conn, PgConnections, translate_errors
from tulving.domain.errors import StorageError
from tulving.domain.records import (
    AuditDraft,
    AuditRecord,
    JobRecord,
    SessionRecord,
    TokenRecord,
)

#: The advisory lock of a tenant's writes and audit chain, one per (schema, tenant).
TENANT_LOCK = "hashtextextended('tulving-audit:' || current_schema() || chr(31) || {}, 0)"

_SESSION_COLUMNS = (
    "id",
    "agent_id",
    "tenant",
    "started_at",
    "last_activity_at",
    "goal",
    "ended_at",
    "end_reason",
    "summary_id",
    "implicit",
)
_JOB_COLUMNS = (
    "id",
    "kind",
    "payload",
    "created_at",
    "status",
    "attempts",
    "idempotency_key",
    "error",
    "claimed_by",
    "claimed_until",
)
_TOKEN_COLUMNS = (
    "id",
    "name",
    "salt",
    "digest",
    "created_at",
    "user_id",
    "workspace_id",
    "agent_id",
    "read_only",
    "revoked_at",
)


def _session(row: Mapping[str, Any]) -> SessionRecord:
    return SessionRecord(**{c: row[c] for c in _SESSION_COLUMNS})


def _audit(row: Mapping[str, Any]) -> AuditRecord:
    return AuditRecord(
        seq=int(row["seq"]),
        tenant=row["tenant"],
        at=row["at"],
        actor=row["actor"],
        action=row["action"],
        entry_id=row["entry_id"],
        input_hash=row["input_hash"],
        details=json.loads(row["details"]),
        prev_hash=row["prev_hash"],
        hash=row["hash"],
    )


def _job(row: Mapping[str, Any]) -> JobRecord:
    return JobRecord(
        id=row["id"],
        kind=row["kind"],
        payload=json.loads(row["payload"]),
        created_at=row["created_at"],
        status=row["status"],
        attempts=int(row["attempts"]),
        idempotency_key=row["idempotency_key"],
        error=row["error"],
        claimed_by=row.get("claimed_by"),
        claimed_until=row.get("claimed_until"),
    )


def _token(row: Mapping[str, Any]) -> TokenRecord:
    return TokenRecord(**{c: row[c] for c in _TOKEN_COLUMNS})


#: Extend the tenants' audit chains (see ``audit_params``).
APPEND_AUDIT = (
    "SELECT r_seq, r_prev, r_hash FROM tulving_append_audit(%s::text[], %s::timestamptz[], "
    "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[])")
#: The tenant's write lock, then its count of writing transactions bumped and set for the
#: transaction (the triggers of migration 5 mark the rows it writes with it in
#: ``entry_writes``); answers the moment the lock was taken, by the server's clock.
LOCK_TENANT = (
    "WITH locked AS (SELECT pg_advisory_xact_lock(" + TENANT_LOCK.format("%s")
    + ")), counted AS (INSERT INTO tenant_writes (tenant, seq) "
    "SELECT %s, 1 FROM locked ON CONFLICT (tenant) DO UPDATE "
    "SET seq = tenant_writes.seq + 1 RETURNING seq) "
    "SELECT set_config('tulving.write_seq', seq::text, true), clock_timestamp() AS at "
    "FROM counted")

AuditRow = tuple[datetime, dict[str, Any]]


def audit_params(drafts: Sequence[AuditDraft]) -> tuple[tuple[Any, ...], list[AuditRow]]:
    """``APPEND_AUDIT``'s parameters, and each record's time and details as hashed.
    ``record_hash`` hashes the JSON list [prev, seq, tenant, at, ...]: the function writes
    the first two and appends the rest of the list, made here."""
    rows: list[AuditRow] = []
    rests: list[str] = []
    for d in drafts:
        at = d.at.astimezone(UTC)
        details = json.loads(json.dumps(dict(d.details), sort_keys=True, default=str))
        rests.append(json.dumps([d.tenant, at.isoformat(), d.actor, d.action, d.entry_id,
                                 d.input_hash, details], sort_keys=True,
                                separators=(",", ":"), default=str)[1:])
        rows.append((at, details))
    params = ([d.tenant for d in drafts], [at for at, _ in rows], [d.actor for d in drafts],
              [d.action for d in drafts], [d.entry_id for d in drafts],
              [d.input_hash for d in drafts],
              [json.dumps(details, sort_keys=True) for _, details in rows], rests)
    return params, rows


def audit_records_of(drafts: Sequence[AuditDraft], rows: Sequence[AuditRow],
                     found: Sequence[Mapping[str, Any]]) -> list[AuditRecord]:
    return [AuditRecord(int(f["r_seq"]), d.tenant, at, d.actor, d.action, d.entry_id,
                        d.input_hash, details, f["r_prev"], f["r_hash"])
            for d, (at, details), f in zip(drafts, rows, found, strict=True)]


class PostgresRecords(PgConnections):
    # -- meta ------------------------------------------------------------------------

    @translate_errors
    def get_meta(self, name: str) -> str | None:
        with self._read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE name = %s", (name,)).fetchone()
        return str(row["value"]) if row else None

    @translate_errors
    def set_meta(self, name: str, value: str) -> None:
        with self._autocommit() as conn:
            conn.execute(
                "INSERT INTO meta (name, value) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                (name, value),
            )

    # -- sessions --------------------------------------------------------------------

    @translate_errors
    def put_session(self, session: SessionRecord) -> None:
        cols = ", ".join(_SESSION_COLUMNS)
        values = ", ".join(["%s"] * len(_SESSION_COLUMNS))
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _SESSION_COLUMNS if c != "id")
        with self._autocommit() as conn:
            conn.execute(
                f"INSERT INTO sessions ({cols}) VALUES ({values}) "
                f"ON CONFLICT (id) DO UPDATE SET {updates}",
                [getattr(session, c) for c in _SESSION_COLUMNS],
            )

    @translate_errors
    def get_session(self, session_id: str) -> SessionRecord | None:
        with self._read() as conn:
            row = conn.execute("SELECT * FROM sessions WHERE id = %s", (session_id,)).fetchone()
        return _session(row) if row else None

    @translate_errors
    def open_sessions(self, agent_id: str, tenant: str) -> list[SessionRecord]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT * FROM sessions WHERE agent_id = %s AND tenant = %s "
                "AND ended_at IS NULL ORDER BY started_at, id",
                (agent_id, tenant),
            ).fetchall()
        return [_session(row) for row in rows]

    # -- audit -----------------------------------------------------------------------

    @translate_errors
    def append_audit(self, drafts: Sequence[AuditDraft]) -> list[AuditRecord]:
        """One statement (``tulving_append_audit``, migration 5): the tenants' locks in
        sorted order, each chain's head, the records hashed and inserted in order."""
        if not drafts:
            return []
        params, rows = audit_params(drafts)

        def work(conn: Conn) -> list[AuditRecord]:
            return audit_records_of(drafts, rows, conn.execute(APPEND_AUDIT, params).fetchall())

        return self._atomic(work)

    @translate_errors
    def audit_records(
        self, tenant: str | None = None, *, entry_id: str | None = None
    ) -> list[AuditRecord]:
        conditions = [(c, v) for c, v in (("tenant = %s", tenant), ("entry_id = %s", entry_id))
                      if v is not None]
        where_sql = " AND ".join(c for c, _ in conditions) or "TRUE"
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT * FROM audit_log WHERE {where_sql} ORDER BY seq",
                [v for _, v in conditions],
            ).fetchall()
        return [_audit(row) for row in rows]

    # -- jobs ------------------------------------------------------------------------

    @translate_errors
    def enqueue(self, job: JobRecord) -> JobRecord:
        def work(conn: Conn) -> JobRecord:
            row = conn.execute(
                f"INSERT INTO jobs ({', '.join(_JOB_COLUMNS[:8])}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING RETURNING id",
                (
                    job.id,
                    job.kind,
                    json.dumps(dict(job.payload), sort_keys=True, default=str),
                    job.created_at,
                    job.status,
                    job.attempts,
                    job.idempotency_key,
                    job.error,
                ),
            ).fetchone()
            if row is not None:
                return job
            if row is None:
                row = conn.execute(
                    "SELECT * FROM jobs WHERE idempotency_key = %s OR id = %s "
                    "ORDER BY (idempotency_key = %s) DESC NULLS LAST LIMIT 1",
                    (job.idempotency_key, job.id, job.idempotency_key),
                ).fetchone()
                assert row is not None
            return _job(row)

        return self._atomic(work)

    @translate_errors
    def pending_jobs(self, kind: str | None = None) -> list[JobRecord]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT * FROM jobs WHERE status = 'pending' AND (%s::text IS NULL OR kind = %s) "
                "ORDER BY created_at, id",
                (kind, kind),
            ).fetchall()
        return [_job(row) for row in rows]

    @translate_errors
    def finish_job(self, job_id: str, *, error: str | None = None) -> None:
        with self._autocommit() as conn:
            conn.execute(
                "UPDATE jobs SET status = %s, error = %s, attempts = attempts + 1 WHERE id = %s",
                ("failed" if error else "done", error, job_id),
            )

    # -- shared state: write order, sessions, jobs, tokens ----------------------------

    def _in_transaction(self, what: str) -> Conn:
        conn = self._outer()
        if conn is None:
            raise StorageError(f"{what} needs a transaction (storage.transaction())")
        return conn

    @translate_errors
    def lock_tenant_writes(self, tenant: str) -> None:
        """The tenant's advisory lock, then (same statement) its count of writing
        transactions bumped and set for this transaction, so the rows it writes carry it
        (``entry_writes``, see ``write_mark``). The count's row is only ever locked by the
        holder of the advisory lock, so it is never waited for."""
        conn = self._in_transaction("lock_tenant_writes")
        conn.execute(LOCK_TENANT, (tenant, tenant)).fetchall()

    @translate_errors
    def write_mark(self, tenant: str) -> int:
        """``WriteMarks``: how many writing transactions of ``tenant`` have committed."""
        with self._read() as conn:
            row = conn.execute("SELECT seq FROM tenant_writes WHERE tenant = %s",
                               (tenant,)).fetchone()
        return int(row["seq"]) if row else 0

    @translate_errors
    def open_session(self, session: SessionRecord) -> SessionRecord:
        cols = ", ".join(_SESSION_COLUMNS)
        values = ", ".join(["%s"] * len(_SESSION_COLUMNS))
        fresh = [getattr(session, c) for c in _SESSION_COLUMNS]
        fresh[_SESSION_COLUMNS.index("ended_at")] = None
        fresh[_SESSION_COLUMNS.index("end_reason")] = None
        fresh[_SESSION_COLUMNS.index("summary_id")] = None

        def work(conn: Conn) -> SessionRecord | None:
            # ON CONFLICT waits for a racing insert to commit, then yields to it.
            row = conn.execute(
                f"INSERT INTO sessions ({cols}) VALUES ({values}) "
                "ON CONFLICT DO NOTHING RETURNING *", fresh).fetchone()
            if row is None:
                row = conn.execute(
                    "SELECT * FROM sessions WHERE agent_id = %s AND tenant = %s "
                    "AND implicit = %s AND ended_at IS NULL",
                    (session.agent_id, session.tenant, session.implicit)).fetchone()
            return _session(row) if row else None

        for _ in range(8):  # the open one may end between our insert and our read
            found = self._atomic(work)
            if found is not None:
                return found
        raise StorageError(f"could not open a session for agent {session.agent_id!r}")

    @translate_errors
    def end_session(self, session_id: str, at: datetime, reason: str) -> SessionRecord | None:
        with self._autocommit() as conn:
            row = conn.execute(
                "UPDATE sessions SET ended_at = %s, end_reason = %s "
                "WHERE id = %s AND ended_at IS NULL RETURNING *",
                (at, reason, session_id)).fetchone()
        return _session(row) if row else None

    @translate_errors
    def set_session_summary(self, session_id: str, summary_id: str | None) -> None:
        with self._autocommit() as conn:
            conn.execute("UPDATE sessions SET summary_id = %s WHERE id = %s",
                         (summary_id, session_id))

    @translate_errors
    def note_session_activity(self, session_id: str, at: datetime) -> None:
        with self._autocommit() as conn:
            conn.execute(
                "UPDATE sessions SET last_activity_at = %s WHERE id IN (SELECT id FROM "
                "sessions WHERE id = %s AND ended_at IS NULL AND last_activity_at < %s "
                "FOR UPDATE SKIP LOCKED)", (at, session_id, at))

    @translate_errors
    def claim_job(self, job_id: str, owner: str, until: datetime, now: datetime) -> bool:
        with self._autocommit() as conn:
            row = conn.execute(
                "UPDATE jobs SET claimed_by = %s, claimed_until = %s WHERE id = %s "
                "AND status = 'pending' AND (claimed_by IS NULL OR claimed_by = %s "
                "OR claimed_until IS NULL OR claimed_until < %s) RETURNING id",
                (owner, until, job_id, owner, now)).fetchone()
        return row is not None

    @translate_errors
    def take_job(self, job_id: str) -> JobRecord | None:
        conn = self._in_transaction("take_job")
        row = conn.execute("SELECT * FROM jobs WHERE id = %s FOR UPDATE",
                           (job_id,)).fetchone()
        return _job(row) if row is not None and row["status"] == "pending" else None

    @translate_errors
    def get_job(self, job_id: str) -> JobRecord | None:
        with self._read() as conn:
            row = conn.execute("SELECT * FROM jobs WHERE id = %s", (job_id,)).fetchone()
        return _job(row) if row else None

    @translate_errors
    def add_token(self, token: TokenRecord) -> bool:
        cols = _TOKEN_COLUMNS[:-1]
        with self._autocommit() as conn:
            row = conn.execute(
                f"INSERT INTO tokens ({', '.join(cols)}) VALUES "
                f"({', '.join(['%s'] * len(cols))}) ON CONFLICT DO NOTHING RETURNING id",
                [getattr(token, c) for c in cols]).fetchone()
        return row is not None

    @translate_errors
    def get_token(self, token_id: str) -> TokenRecord | None:
        with self._read() as conn:
            row = conn.execute("SELECT * FROM tokens WHERE id = %s AND revoked_at IS NULL",
                               (token_id,)).fetchone()
        return _token(row) if row else None

    @translate_errors
    def token_with_sessions(self, token_id: str, agent_id: str
                            ) -> tuple[TokenRecord | None, list[SessionRecord]]:
        """``TokenSessions``: the token and its agent's open sessions in one statement
        (the tenant spelt as ``Identity.tenant`` spells it: user, unit separator,
        workspace)."""
        picked = ", ".join(f"s.{c} AS s_{c}" for c in _SESSION_COLUMNS)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT t.*, {picked} FROM tokens t LEFT JOIN sessions s "
                "ON s.agent_id = COALESCE(t.agent_id, %s) AND s.ended_at IS NULL "
                "AND s.tenant = COALESCE(t.user_id, '') || chr(31) || "
                "COALESCE(t.workspace_id, '') "
                "WHERE t.id = %s AND t.revoked_at IS NULL ORDER BY s.started_at, s.id",
                (agent_id, token_id)).fetchall()
        if not rows:
            return None, []
        sessions = [SessionRecord(**{c: row[f"s_{c}"] for c in _SESSION_COLUMNS})
                    for row in rows if row["s_id"] is not None]
        return _token(rows[0]), sessions

    @translate_errors
    def live_tokens(self) -> list[TokenRecord]:
        with self._read() as conn:
            rows = conn.execute("SELECT * FROM tokens WHERE revoked_at IS NULL "
                                "ORDER BY created_at, id").fetchall()
        return [_token(r) for r in rows]

    @translate_errors
    def revoke_token(self, id_or_name: str, at: datetime) -> TokenRecord | None:
        with self._autocommit() as conn:
            row = conn.execute(
                "UPDATE tokens SET revoked_at = %s WHERE revoked_at IS NULL AND id = ("
                "SELECT id FROM tokens WHERE revoked_at IS NULL AND (id = %s OR name = %s) "
                "ORDER BY id = %s DESC LIMIT 1) RETURNING *",
                (at, id_or_name, id_or_name, id_or_name)).fetchone()
        return _token(row) if row else None
