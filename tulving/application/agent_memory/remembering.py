"""``remember(text)``: the path from raw text to typed memories.

By default (``wait=None``) the turns are committed (EPISODEs, findable by full text at
once, their vectors deferred) with one ``extract`` enrichment task per turn in the same
transaction, and the call returns the turns: what is read off them follows in the
background (:mod:`~tulving.application.agent_memory.read_off_turns`), durable and run once.
``wait=True`` also runs that enrichment (the vectors and what is read off) before
returning, and returns the turns and what was read off them: read-your-writes.

The durable job queue (:mod:`tulving.application.agent_memory.jobs`) stays for the two
uses it served: an ``idempotency_key`` (a repeat is a no-op, also from another process)
and ``wait=False`` (deprecated: the default now returns as soon as the turns are durable;
a ``RememberJob`` still follows such a call). Validation happens before anything is
written or queued, so a bad call leaves nothing behind.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tulving.application.agent_memory.extraction import (
    check_text,
    extract_fields,
    link_sources,
    turn_fields,
)
from tulving.application.agent_memory.jobs import KeyedRememberJobs, RememberJob, scoped_key
from tulving.application.agent_memory.read_off_turns import CALL, SUBJECT
from tulving.application.agent_memory.read_off_turns import KIND as EXTRACT
from tulving.application.agent_memory.session_writes import SessionWrites
from tulving.application.agent_memory.sessions import SessionManager
from tulving.application.plumbing import deadline
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.enrichment import Enricher
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.application.plumbing.write_order import writing
from tulving.domain.entry import MemoryEntry
from tulving.domain.entry_factory import check_time
from tulving.domain.errors import ValidationError
from tulving.domain.extraction_rules import split_turns
from tulving.domain.ids import new_id
from tulving.domain.query import EntryFilter
from tulving.domain.records import JobRecord
from tulving.domain.reinforcement import evidence_of
from tulving.domain.types import SourceType
from tulving.domain.write_policy import WritePolicy, scrub_text

#: ``write(batch, operation, session_id) -> entries``: the facade's write path.
WriteBatch = Callable[[list[dict[str, Any]], str, str | None], list[MemoryEntry]]


class Rememberer:
    def __init__(
        self, ctx: MemoryContext, llm: LLMGateway, sessions: SessionManager,
        write: WriteBatch, policy: Callable[[], WritePolicy], writes: SessionWrites,
        enricher: Enricher,
    ) -> None:
        self.ctx = ctx
        self.llm = llm
        self.sessions = sessions
        self.write = write
        self.policy = policy
        self.writes = writes
        self.enricher = enricher
        self.jobs = KeyedRememberJobs(ctx, self.prepare, self.write_job)

    def remember(
        self, text: str, *, source_type: str, idempotency_key: str | None,
        wait: bool | None, valid_from: datetime | None, subject: str | None,
    ) -> list[MemoryEntry] | RememberJob:
        check_text(text)
        # What the write policy would mask is masked before extraction reads the text and
        # before a job stores it: a fact's value must not carry what its turn lost.
        text = scrub_text(text, self.policy())
        scoped_key(self.ctx, idempotency_key)
        source = SourceType.parse(source_type)
        when = check_time("valid_from", valid_from)
        if wait is not None and not isinstance(wait, bool):
            raise ValidationError("wait must be True, False or None")
        if subject is not None and (not isinstance(subject, str) or not subject.strip()):
            raise ValidationError("subject must be a non-empty string")
        if idempotency_key is None and wait is not False:
            turns = self.commit_turns(text, source, when, subject)
            return turns if wait is None else self.enriched(turns)
        if wait is False:
            warnings.warn("remember(wait=False) is deprecated: remember() returns once the "
                          "turns are durable, and what is read off them follows in the "
                          "background (Memory.wait_enriched() waits for it)",
                          DeprecationWarning, stacklevel=3)
        wait = wait is not False  # a keyed call waits unless told not to, as before
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

    def commit_turns(self, text: str, source: SourceType, when: datetime | None,
                     subject: str | None) -> list[MemoryEntry]:
        """Commit the turns of ``text`` and queue what is read off them (one transaction)."""
        extra: dict[str, Any] = {CALL: new_id(self.ctx.clock.now())}
        if subject is not None:
            extra[SUBJECT] = subject.strip()
        fields = turn_fields(split_turns(text), source_type=source, valid_from=when,
                             extra=extra)
        return [o.entry for o in self.writes.write(fields, "remember", defer_vectors=True,
                                                   enrich=(EXTRACT,))]

    def enriched(self, turns: list[MemoryEntry]) -> list[MemoryEntry]:
        """Wait for what derives from ``turns`` (read off, embedded); the turns as they
        are now (a decision's turn retyped) and what was read off them, in order."""
        self.enricher.wait()
        ids = {t.id for t in turns}
        now = {e.id: e for e in self.ctx.storage.get_many([t.id for t in turns])}
        flt = EntryFilter(partitions=self.ctx.visible_partitions(),
                          session_id=turns[0].session_id if turns else None)
        derived = [e for e in self.ctx.storage.query(flt, newest_first=False)
                   if e.id not in ids and (ids & set(e.source_entry_ids)
                                          or ids & set(evidence_of(e).sources))]
        return [now.get(t.id, t) for t in turns] + derived

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
