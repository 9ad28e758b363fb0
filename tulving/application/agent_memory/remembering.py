"""``remember(text)``: the path from raw text to typed memories, inline or as a durable job.

Validation happens before anything is queued, so a bad call never leaves a job behind.
Without ``wait`` or with an idempotency key the text goes through the durable queue
(:mod:`tulving.application.agent_memory.jobs`); otherwise it is extracted and written
inline. Either way extraction (:mod:`~tulving.application.agent_memory.extraction`) runs
outside any transaction and the write of a job is one transaction (all entries or none).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from tulving.application.agent_memory.extraction import check_text, extract_fields, link_sources
from tulving.application.agent_memory.jobs import JobQueue, RememberJob, scoped_key
from tulving.application.agent_memory.sessions import SessionManager
from tulving.application.plumbing import deadline
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.application.plumbing.write_order import writing
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import check_time
from tulving.domain.errors import ValidationError
from tulving.domain.records import JobRecord
from tulving.domain.types import SourceType
from tulving.domain.write_policy import WritePolicy, scrub_text

#: ``write(batch, operation, session_id) -> entries``: the facade's write path.
WriteBatch = Callable[[list[dict[str, Any]], str, str | None], list[MemoryEntry]]


class Rememberer:
    def __init__(
        self, ctx: MemoryContext, llm: LLMGateway, sessions: SessionManager,
        write: WriteBatch, policy: Callable[[], WritePolicy],
    ) -> None:
        self.ctx = ctx
        self.llm = llm
        self.sessions = sessions
        self.write = write
        self.policy = policy
        self.jobs = JobQueue(ctx, self.prepare, self.write_job)

    def remember(
        self, text: str, *, source_type: str, idempotency_key: str | None, wait: bool,
        valid_from: datetime | None, subject: str | None,
    ) -> list[MemoryEntry] | RememberJob:
        check_text(text)
        # What the write policy would mask is masked before extraction reads the text and
        # before a job stores it: a fact's value must not carry what its turn lost.
        text = scrub_text(text, self.policy())
        scoped_key(self.ctx, idempotency_key)
        source = SourceType.parse(source_type)
        when = check_time("valid_from", valid_from)
        if not isinstance(wait, bool):
            raise ValidationError("wait must be True or False")
        if subject is not None and (not isinstance(subject, str) or not subject.strip()):
            raise ValidationError("subject must be a non-empty string")
        payload = {"text": text, "source_type": source.value,
                   "valid_from": when.isoformat() if when else None,
                   "subject": subject, "session_id": self.sessions.for_write()}
        if wait and idempotency_key is None:
            job = JobRecord(id="inline", kind="remember", payload=payload,
                            created_at=self.ctx.clock.now())
            return self.write_job(job, self.prepare(job))
        job, new = self.jobs.submit(payload, idempotency_key)
        if not wait:
            self.jobs.wake()
            return RememberJob(self.jobs, job)
        done = self.jobs.result(job)
        if done is not None or (not new and job.status != "pending"):
            return done or []
        self.jobs.claim(job)  # keeps background workers off it; the run itself is single
        return self.jobs.run(job)

    def prepare(self, job: JobRecord) -> list[dict[str, Any]]:
        """The slow part (LLM extraction, or the no-LLM rules), outside any transaction."""
        p = job.payload
        when = datetime.fromisoformat(p["valid_from"]) if p.get("valid_from") else None
        return extract_fields(self.llm, p["text"], source_type=SourceType.parse(p["source_type"]),
                              valid_from=when,
                              subject=p.get("subject") or self.ctx.identity.user_id or "user")

    def write_job(self, job: JobRecord, fields: list[dict[str, Any]]) -> list[MemoryEntry]:
        session_id = job.payload.get("session_id")

        def write(batch: list[dict[str, Any]]) -> list[MemoryEntry]:
            return self.write(batch, "remember", session_id)

        with writing(self.ctx):  # the Memory's lock, then the store's transaction
            deadline.check("remember")  # waited for the lock past its caller's deadline
            entries = link_sources(fields, write)
        return list({e.id: e for e in entries}.values())
