"""Meta, sessions, the audit log and durable jobs of the PostgreSQL store.

Audit appends of one tenant are serialised by a per-tenant advisory lock held until
commit: the next appender reads the committed predecessor, so writers on many machines
extend one chain instead of forking it. Tenants of a batch are locked in sorted order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any

from tulving.adapters.storage.postgres.connection import Conn, PgConnections, translate_errors
from tulving.domain.audit_chain import GENESIS, record_hash
from tulving.domain.records import AuditDraft, AuditRecord, JobRecord, SessionRecord

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
    )


class RecordMixin(PgConnections):
    # -- meta ------------------------------------------------------------------------

    @translate_errors
    def get_meta(self, name: str) -> str | None:
        with self._read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE name = %s", (name,)).fetchone()
        return str(row["value"]) if row else None

    @translate_errors
    def set_meta(self, name: str, value: str) -> None:
        with self._read() as conn:
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
        with self._read() as conn:
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
        if not drafts:
            return []

        def work(conn: Conn) -> list[AuditRecord]:
            tenants = sorted({d.tenant for d in drafts})
            conn.execute(
                "SELECT pg_advisory_xact_lock(h) FROM (SELECT hashtextextended("
                "'tulving-audit:' || current_schema() || chr(31) || t, 0) AS h "
                "FROM unnest(%s::text[]) AS u(t)) s ORDER BY h",
                (tenants,),
            ).fetchall()
            heads: dict[str, str] = {}
            for tenant in tenants:
                row = conn.execute(
                    "SELECT hash FROM audit_log WHERE tenant = %s ORDER BY seq DESC LIMIT 1",
                    (tenant,),
                ).fetchone()
                heads[tenant] = row["hash"] if row else GENESIS
            out: list[AuditRecord] = []
            for d in drafts:
                seq_row = conn.execute(
                    "SELECT nextval(pg_get_serial_sequence('audit_log', 'seq')) AS seq"
                ).fetchone()
                assert seq_row is not None
                seq = int(seq_row["seq"])
                at = d.at.astimezone(UTC)
                details = json.loads(json.dumps(dict(d.details), sort_keys=True, default=str))
                prev = heads[d.tenant]
                digest = record_hash(
                    prev, seq, d.tenant, at, d.actor, d.action, d.entry_id, d.input_hash, details
                )
                conn.execute(
                    "INSERT INTO audit_log (seq, tenant, at, actor, action, entry_id, "
                    "input_hash, details, prev_hash, hash) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        seq,
                        d.tenant,
                        at,
                        d.actor,
                        d.action,
                        d.entry_id,
                        d.input_hash,
                        json.dumps(details, sort_keys=True),
                        prev,
                        digest,
                    ),
                )
                heads[d.tenant] = digest
                out.append(
                    AuditRecord(
                        seq,
                        d.tenant,
                        at,
                        d.actor,
                        d.action,
                        d.entry_id,
                        d.input_hash,
                        details,
                        prev,
                        digest,
                    )
                )
            return out

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
                f"INSERT INTO jobs ({', '.join(_JOB_COLUMNS)}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
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
        with self._read() as conn:
            conn.execute(
                "UPDATE jobs SET status = %s, error = %s, attempts = attempts + 1 WHERE id = %s",
                ("failed" if error else "done", error, job_id),
            )
