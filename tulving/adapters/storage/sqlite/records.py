"""Meta, sessions, the audit log, durable jobs and bearer tokens of the SQLite store.

Shared state is claimed in one statement each, as on PostgreSQL (DESIGN.md, "The
seams"), although one process writes a SQLite store: a session opened by an insert its
one-open-session index admits, ended by an ``UPDATE ... WHERE ended_at IS NULL``; a job's
lease by one conditional ``UPDATE``; a token by one insert and revoked by one ``UPDATE``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

import attrs

from tulving.adapters.storage.rows import parse_ts, ts
from tulving.adapters.storage.sqlite.connection import SQLiteConnections, _at
from tulving.adapters.storage.sqlite.encryption import INTEGRITY_ERRORS
from tulving.domain.audit_chain import GENESIS, record_hash
from tulving.domain.errors import StorageError
from tulving.domain.records import (
    AuditDraft,
    AuditRecord,
    JobRecord,
    SessionRecord,
    TokenRecord,
)


class SQLiteRecords(SQLiteConnections):
    def get_meta(self, name: str) -> str | None:
        rows = self._fetch("SELECT value FROM meta WHERE name = ?", (name,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, name: str, value: str) -> None:
        with self.transaction():
            self._c.execute("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", (name, value))

    def put_session(self, session: SessionRecord) -> None:
        try:
            self._put_session(session)
        except INTEGRITY_ERRORS as exc:
            raise StorageError(f"session {session.id} rejected by the store: {exc}") from exc

    def _put_session(self, session: SessionRecord) -> None:
        with self.transaction():
            # An upsert by id (not INSERT OR REPLACE, which would delete another open
            # session that the one-open-session index finds in the way).
            self._c.execute(
                "INSERT INTO sessions(id, agent_id, tenant, started_at,"
                " last_activity_at, goal, ended_at, end_reason, summary_id, implicit)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                " agent_id = excluded.agent_id, tenant = excluded.tenant,"
                " started_at = excluded.started_at,"
                " last_activity_at = excluded.last_activity_at, goal = excluded.goal,"
                " ended_at = excluded.ended_at, end_reason = excluded.end_reason,"
                " summary_id = excluded.summary_id, implicit = excluded.implicit",
                (session.id, session.agent_id, session.tenant, ts(session.started_at),
                 ts(session.last_activity_at), session.goal, ts(session.ended_at),
                 session.end_reason, session.summary_id, int(session.implicit)),
            )

    def get_session(self, session_id: str) -> SessionRecord | None:
        rows = self._fetch("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return _session(rows[0]) if rows else None

    def open_sessions(self, agent_id: str, tenant: str) -> list[SessionRecord]:
        rows = self._fetch(
            "SELECT * FROM sessions WHERE agent_id = ? AND tenant = ? AND ended_at IS NULL"
            " ORDER BY started_at",
            (agent_id, tenant),
        )
        return [_session(r) for r in rows]

    def open_session(self, session: SessionRecord) -> SessionRecord:
        with self.transaction():
            cur = self._c.execute(
                "INSERT OR IGNORE INTO sessions(id, agent_id, tenant, started_at,"
                " last_activity_at, goal, ended_at, end_reason, summary_id, implicit)"
                " VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?)",
                (session.id, session.agent_id, session.tenant, ts(session.started_at),
                 ts(session.last_activity_at), session.goal, int(session.implicit)))
            if cur.rowcount:
                return attrs.evolve(session, ended_at=None, end_reason=None, summary_id=None)
            row = self._c.execute(
                "SELECT * FROM sessions WHERE agent_id = ? AND tenant = ? AND implicit = ?"
                " AND ended_at IS NULL",
                (session.agent_id, session.tenant, int(session.implicit))).fetchone()
        if row is None:
            raise StorageError(f"session id {session.id} exists already")
        return _session(row)

    def end_session(self, session_id: str, at: datetime, reason: str) -> SessionRecord | None:
        with self.transaction():
            cur = self._c.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?"
                " AND ended_at IS NULL", (ts(at), reason, session_id))
            if not cur.rowcount:
                return None
            row = self._c.execute("SELECT * FROM sessions WHERE id = ?",
                                  (session_id,)).fetchone()
        return _session(row)

    def set_session_summary(self, session_id: str, summary_id: str | None) -> None:
        with self.transaction():
            self._c.execute("UPDATE sessions SET summary_id = ? WHERE id = ?",
                            (summary_id, session_id))

    def note_session_activity(self, session_id: str, at: datetime) -> None:
        with self.transaction():
            self._c.execute(
                "UPDATE sessions SET last_activity_at = ? WHERE id = ? AND ended_at IS NULL"
                " AND last_activity_at < ?", (ts(at), session_id, ts(at)))

    def append_audit(self, drafts: Sequence[AuditDraft]) -> list[AuditRecord]:
        out: list[AuditRecord] = []
        with self.transaction():
            for d in drafts:
                row = self._c.execute(
                    "SELECT hash FROM audit_log WHERE tenant = ? ORDER BY seq DESC LIMIT 1",
                    (d.tenant,),
                ).fetchone()
                prev = row[0] if row else GENESIS
                seq_row = self._c.execute(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'audit_log'"
                ).fetchone()
                seq = (int(seq_row[0]) if seq_row else 0) + 1
                details = dict(d.details)
                d = attrs.evolve(d, at=d.at.astimezone(UTC))  # the hash must survive a read-back
                digest = record_hash(
                    prev, seq, d.tenant, d.at, d.actor, d.action, d.entry_id, d.input_hash, details
                )
                self._c.execute(
                    "INSERT INTO audit_log(seq, tenant, at, actor, action, entry_id, input_hash,"
                    " details, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (seq, d.tenant, ts(d.at), d.actor, d.action, d.entry_id, d.input_hash,
                     json.dumps(details, sort_keys=True), prev, digest),
                )
                out.append(AuditRecord(seq, d.tenant, d.at, d.actor, d.action, d.entry_id,
                                       d.input_hash, details, prev, digest))
        return out

    def audit_records(
        self, tenant: str | None = None, *, entry_id: str | None = None
    ) -> list[AuditRecord]:
        conditions = [(c, v) for c, v in (("tenant = ?", tenant), ("entry_id = ?", entry_id))
                      if v is not None]
        where_sql = " AND ".join(c for c, _ in conditions) or "1"
        rows = self._fetch(f"SELECT * FROM audit_log WHERE {where_sql} ORDER BY seq",
                           [v for _, v in conditions])
        return [
            AuditRecord(int(r["seq"]), r["tenant"], _at(r["at"]), r["actor"], r["action"],
                        r["entry_id"], r["input_hash"], json.loads(r["details"]),
                        r["prev_hash"], r["hash"])
            for r in rows
        ]

    def enqueue(self, job: JobRecord) -> JobRecord:
        with self.transaction():
            if job.idempotency_key is not None:
                rows = self._c.execute(
                    "SELECT * FROM jobs WHERE idempotency_key = ?", (job.idempotency_key,)
                ).fetchall()
                if rows:
                    return _job(rows[0])
            self._c.execute(
                "INSERT INTO jobs(id, kind, payload, created_at, status, attempts,"
                " idempotency_key, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (job.id, job.kind, json.dumps(dict(job.payload)), ts(job.created_at),
                 job.status, job.attempts, job.idempotency_key, job.error),
            )
        return job

    def pending_jobs(self, kind: str | None = None) -> list[JobRecord]:
        if kind is None:
            rows = self._fetch("SELECT * FROM jobs WHERE status = 'pending' ORDER BY created_at, id")
        else:
            rows = self._fetch(
                "SELECT * FROM jobs WHERE status = 'pending' AND kind = ? ORDER BY created_at, id",
                (kind,),
            )
        return [_job(r) for r in rows]

    def finish_job(self, job_id: str, *, error: str | None = None) -> None:
        with self.transaction():
            self._c.execute(
                "UPDATE jobs SET status = ?, attempts = attempts + 1, error = ? WHERE id = ?",
                ("failed" if error else "done", error, job_id),
            )

    def claim_job(self, job_id: str, owner: str, until: datetime, now: datetime) -> bool:
        with self.transaction():
            cur = self._c.execute(
                "UPDATE jobs SET claimed_by = ?, claimed_until = ? WHERE id = ?"
                " AND status = 'pending' AND (claimed_by IS NULL OR claimed_by = ?"
                " OR claimed_until IS NULL OR claimed_until < ?)",
                (owner, ts(until), job_id, owner, ts(now)))
        return bool(cur.rowcount)

    def take_job(self, job_id: str) -> JobRecord | None:
        with self.transaction():  # BEGIN IMMEDIATE: the caller's, already exclusive
            rows = self._c.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchall()
        job = _job(rows[0]) if rows else None
        return job if job is not None and job.status == "pending" else None

    def get_job(self, job_id: str) -> JobRecord | None:
        rows = self._fetch("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return _job(rows[0]) if rows else None

    def add_token(self, token: TokenRecord) -> bool:
        with self.transaction():
            if self._c.execute("SELECT 1 FROM tokens WHERE id = ?", (token.id,)).fetchone():
                return False
            cur = self._c.execute(
                "INSERT OR IGNORE INTO tokens(id, name, salt, digest, created_at, user_id,"
                " workspace_id, agent_id, read_only) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (token.id, token.name, token.salt, token.digest, ts(token.created_at),
                 token.user_id, token.workspace_id, token.agent_id, int(token.read_only)))
        return bool(cur.rowcount)

    def get_token(self, token_id: str) -> TokenRecord | None:
        rows = self._fetch("SELECT * FROM tokens WHERE id = ? AND revoked_at IS NULL",
                           (token_id,))
        return _token(rows[0]) if rows else None

    def live_tokens(self) -> list[TokenRecord]:
        rows = self._fetch("SELECT * FROM tokens WHERE revoked_at IS NULL"
                           " ORDER BY created_at, id")
        return [_token(r) for r in rows]

    def revoke_token(self, id_or_name: str, at: datetime) -> TokenRecord | None:
        with self.transaction():
            row = self._c.execute(
                "SELECT id FROM tokens WHERE revoked_at IS NULL AND (id = ? OR name = ?)"
                " ORDER BY id = ? DESC LIMIT 1", (id_or_name, id_or_name, id_or_name)
            ).fetchone()
            if row is None:
                return None
            self._c.execute("UPDATE tokens SET revoked_at = ? WHERE id = ?", (ts(at), row[0]))
            found = self._c.execute("SELECT * FROM tokens WHERE id = ?", (row[0],)).fetchone()
        return _token(found)


def _session(r: sqlite3.Row) -> SessionRecord:
    return SessionRecord(
        id=r["id"], agent_id=r["agent_id"], tenant=r["tenant"], started_at=_at(r["started_at"]),
        last_activity_at=_at(r["last_activity_at"]), goal=r["goal"],
        ended_at=parse_ts(r["ended_at"]), end_reason=r["end_reason"],
        summary_id=r["summary_id"], implicit=bool(r["implicit"]),
    )


def _job(r: sqlite3.Row) -> JobRecord:
    return JobRecord(
        id=r["id"], kind=r["kind"], payload=json.loads(r["payload"]),
        created_at=_at(r["created_at"]), status=r["status"], attempts=int(r["attempts"]),
        idempotency_key=r["idempotency_key"], error=r["error"],
        claimed_by=r["claimed_by"], claimed_until=parse_ts(r["claimed_until"]),
    )


def _token(r: sqlite3.Row) -> TokenRecord:
    return TokenRecord(
        id=r["id"], name=r["name"], salt=r["salt"], digest=r["digest"],
        created_at=_at(r["created_at"]), user_id=r["user_id"],
        workspace_id=r["workspace_id"], agent_id=r["agent_id"],
        read_only=bool(r["read_only"]), revoked_at=parse_ts(r["revoked_at"]),
    )
