"""Per-agent sessions (ADR-013): explicit, implicit, and recovered after a crash.

Three layers: the explicit API (``with memory.session(goal):``, ``start_session`` /
``end_session``); integration hooks (the MCP server calls ``shutdown_session`` when it
stops); and activity-gap detection: at startup, this agent's sessions still open whose last
activity is older than ``ABANDON_AFTER`` (by the clock) are ended with reason
``abandoned`` and summarised. Other agents' sessions are never touched.

A write outside an explicit session opens an *implicit* session so every entry has a
session and crashes still get summarised. An implicit session never blocks an explicit
one: starting an explicit session ends the implicit one first. A recent implicit session
left open by a previous process of the same agent is resumed rather than duplicated, so
short CLI invocations share one session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from types import TracebackType

import attrs

from tulving.application.agent_memory.summaries import Writer, summarise_session, with_summary
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.domain.entry import MemoryEntry
from tulving.domain.errors import ValidationError
from tulving.domain.ids import new_id
from tulving.domain.records import SessionRecord

ABANDON_AFTER = timedelta(hours=2)
#: Activity is persisted at most this often (each write would otherwise rewrite the row).
ACTIVITY_RESOLUTION = timedelta(seconds=60)


class SessionManager:
    def __init__(self, ctx: MemoryContext, llm: LLMGateway, write: Writer,
                 abandon_after: timedelta = ABANDON_AFTER) -> None:
        self._ctx = ctx
        self._llm = llm
        self._write = write
        self.abandon_after = abandon_after
        self._lock = threading.RLock()
        self.current: SessionRecord | None = None

    # -- startup ------------------------------------------------------------------------
    def recover(self) -> list[SessionRecord]:
        """End this agent's abandoned sessions; resume a recent implicit one."""
        ctx = self._ctx
        now = ctx.clock.now()
        ended: list[SessionRecord] = []
        for record in ctx.storage.open_sessions(ctx.identity.agent_id, ctx.identity.tenant):
            if now - record.last_activity_at > self.abandon_after:
                ended.append(self._finish(record, "abandoned", now))
            elif record.implicit and self.current is None:
                self._activate(record)
        return ended

    # -- explicit API -------------------------------------------------------------------
    def start(self, goal: str | None = None) -> SessionRecord:
        if goal is not None and (not isinstance(goal, str) or len(goal) > 2_000):
            raise ValidationError("goal must be a string of at most 2000 characters")
        with self._lock:
            if self.current is not None and not self.current.implicit:
                raise ValidationError(
                    f"session {self.current.id} is already active; end it before starting another"
                )
            now = self._ctx.clock.now()
            if self.current is not None:  # implicit: yields to the explicit one
                self._finish(self.current, "ended", now)
            record = SessionRecord(
                id=new_id(now), agent_id=self._ctx.identity.agent_id,
                tenant=self._ctx.identity.tenant, started_at=now, last_activity_at=now,
                goal=goal, implicit=False,
            )
            self._ctx.storage.put_session(record)
            self._activate(record)
            return record

    def end(self, reason: str = "ended", *, only: str | None = None) -> SessionRecord | None:
        """End the current session (explicit or implicit) and summarise it; with ``only``,
        just when that session is still the current one."""
        with self._lock:
            if self.current is None or (only is not None and self.current.id != only):
                return None
            return self._finish(self.current, reason, self._ctx.clock.now())

    # -- writes -------------------------------------------------------------------------
    def for_write(self) -> str:
        """The session id new entries carry; opens an implicit session if none is open."""
        with self._lock:
            if self.current is None:
                now = self._ctx.clock.now()
                record = SessionRecord(
                    id=new_id(now), agent_id=self._ctx.identity.agent_id,
                    tenant=self._ctx.identity.tenant, started_at=now, last_activity_at=now,
                    implicit=True,
                )
                self._ctx.storage.put_session(record)
                self._activate(record)
            assert self.current is not None
            return self.current.id

    def touch(self, session_id: str | None) -> None:
        with self._lock:
            record = self.current
            if record is None or record.id != session_id:
                return
            now = self._ctx.clock.now()
            if now - record.last_activity_at >= ACTIVITY_RESOLUTION:
                record = attrs.evolve(record, last_activity_at=now)
                self._ctx.storage.put_session(record)
                self.current = record

    # -- internals ----------------------------------------------------------------------
    def _activate(self, record: SessionRecord) -> None:
        self.current = record
        self._ctx.session_id = record.id

    def _finish(self, record: SessionRecord, reason: str, now: datetime) -> SessionRecord:
        ending = attrs.evolve(record, end_reason=reason)
        summary: MemoryEntry | None = summarise_session(self._ctx, self._llm, ending,
                                                        self._write, now)
        done = with_summary(attrs.evolve(ending, ended_at=now), summary)
        self._ctx.storage.put_session(done)
        if self.current is not None and self.current.id == record.id:
            self.current = None
            self._ctx.session_id = None
        return done


class Session:
    """Handle returned by ``memory.session()``: a context manager that ends the session."""

    def __init__(self, record: SessionRecord, end: Callable[[], SessionRecord | None]) -> None:
        self.record = record
        self._end = end
        self.ended: SessionRecord | None = None

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def goal(self) -> str | None:
        return self.record.goal

    @property
    def summary_id(self) -> str | None:
        return self.ended.summary_id if self.ended else None

    def end(self) -> SessionRecord | None:
        if self.ended is None:
            self.ended = self._end() or self.record
        return self.ended

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.end()
