"""Records beside entries: sessions, audit log rows, durable jobs and bearer tokens."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs


@attrs.frozen
class SessionRecord:
    id: str
    agent_id: str
    tenant: str
    started_at: datetime
    last_activity_at: datetime
    goal: str | None = None
    ended_at: datetime | None = None
    end_reason: str | None = None  # "ended" | "abandoned" | "shutdown"
    summary_id: str | None = None
    implicit: bool = False


@attrs.frozen
class AuditRecord:
    """One append-only audit row; ``hash`` chains it to ``prev_hash`` within its tenant."""

    seq: int
    tenant: str
    at: datetime
    actor: str
    action: str
    entry_id: str | None
    input_hash: str
    details: Mapping[str, Any]
    prev_hash: str
    hash: str


@attrs.frozen
class AuditDraft:
    """What a caller asks to append; storage assigns seq and the chain hashes atomically."""

    tenant: str
    at: datetime
    actor: str
    action: str
    entry_id: str | None
    input_hash: str
    details: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class JobRecord:
    id: str
    kind: str
    payload: Mapping[str, Any]
    created_at: datetime
    status: str = "pending"  # "pending" | "done" | "failed"
    attempts: int = 0
    idempotency_key: str | None = None
    error: str | None = None
    #: Who is working on the job and until when (a lease taken in one statement, see
    #: ``JobClaims.claim_job``): a background worker leaves a job with a live lease alone.
    claimed_by: str | None = None
    claimed_until: datetime | None = None


@attrs.frozen
class TokenRecord:
    """A bearer token of the HTTP doors as the store keeps it: never the secret, only an
    HMAC of it with a per-token salt. ``user_id``/``workspace_id`` are the tenant the token
    acts for (None: the server's own, for MCP tokens that predate tenancy), ``agent_id``
    optionally pins one agent, ``read_only`` refuses writes. A revoked token keeps its row
    (``revoked_at``), so its id can never come back."""

    id: str
    name: str
    salt: str
    digest: str
    created_at: datetime
    user_id: str | None = None
    workspace_id: str | None = None
    agent_id: str | None = None
    read_only: bool = False
    revoked_at: datetime | None = None
