"""Per-agent sessions (ADR-013): explicit, implicit, and recovered after a crash.

Three layers: the explicit API (``with memory.session(goal):``, ``start_session`` /
``end_session``); integration hooks (the MCP server calls ``shutdown_session`` when it
stops); and activity-gap detection: at startup, this agent's sessions still open whose last
activity is older than ``ABANDON_AFTER`` (by the clock) are ended with reason
``abandoned`` and summarised. Other agents' sessions are never touched.

A write outside an explicit session joins the agent's *implicit* session, opening one if
there is none, so every entry has a session and crashes still get summarised. An implicit
session never blocks an explicit one: starting an explicit session ends the implicit one.

The store is the one source of truth (DESIGN.md, "The seams"): nothing here remembers
"the current session" between calls. It is the agent's open explicit session, else its
open implicit one, as the store says at each call, so every process of one agent (server
replicas, short CLI invocations, a ``Memory`` per thread) sees the same session: one
started through one replica is the one another writes into and ends. The store admits at
most one open implicit and one open explicit session per (agent, tenant) and ends a
session once (``SessionClaims``): of two processes ending one session, one summarises it.
The only per-process memory is when this process last noted activity on a session, which
only saves rewriting the row within ``ACTIVITY_RESOLUTION``.

Within one request of a server (``sessions_read_once``) the store is asked once: a
request's calls (its filter, its write's session) use what the store said at its start,
as one call always did, and the answer may come from a query the request runs anyway
(the token lookup, ``known_sessions``). A change this thread makes to the agent's
sessions drops that answer, so the next lookup reads the store again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from types import TracebackType

import attrs

from tulving.application.agent_memory.summaries import Writer, summarise_session
from tulving.application.plumbing.context import MemoryContext
from tulving.application.plumbing.llm_gateway import LLMGateway
from tulving.domain.errors import StateConflict, ValidationError
from tulving.domain.ids import new_id
from tulving.domain.records import SessionRecord

ABANDON_AFTER = timedelta(hours=2)
#: Activity is persisted at most this often (each write would otherwise rewrite the row).
ACTIVITY_RESOLUTION = timedelta(seconds=60)

#: Open sessions by (agent, tenant) as the store said them in the current request.
_known: ContextVar[dict[tuple[str, str], list[SessionRecord]] | None] = ContextVar(
    "tulving_open_sessions", default=None)


@contextmanager
def sessions_read_once() -> Iterator[None]:
    """Inside: each (agent, tenant)'s open sessions are read from the store at most once
    on this thread (or taken from ``known_sessions``), and read again after a change of
    them made here. Nested scopes join the outer one."""
    if _known.get() is not None:
        yield
        return
    token = _known.set({})
    try:
        yield
    finally:
        _known.reset(token)


def known_sessions(agent_id: str, tenant: str, records: Iterable[SessionRecord]) -> None:
    """What a query that ran anyway said of the agent's open sessions (inside
    ``sessions_read_once``; nothing outside it)."""
    known = _known.get()
    if known is not None:
        known[(agent_id, tenant)] = list(records)


class SessionManager:
    def __init__(self, ctx: MemoryContext, llm: LLMGateway, write: Writer,
                 abandon_after: timedelta = ABANDON_AFTER) -> None:
        self._ctx = ctx
        self._llm = llm
        self._write = write
        self.abandon_after = abandon_after
        self._noted: dict[str, datetime] = {}  # session id -> activity this process wrote
        ctx.current_session = self.current_id

    # -- what the store says -------------------------------------------------------------
    def _open(self) -> list[SessionRecord]:
        ident = self._ctx.identity
        known = _known.get()
        slot = (ident.agent_id, ident.tenant)
        if known is not None and slot in known:
            return list(known[slot])
        found = self._ctx.storage.open_sessions(ident.agent_id, ident.tenant)
        if known is not None:
            known[slot] = list(found)
        return found

    def _changed(self) -> None:
        """This thread changed the agent's sessions: the next lookup reads the store."""
        known = _known.get()
        if known is not None:
            ident = self._ctx.identity
            known.pop((ident.agent_id, ident.tenant), None)

    def current(self) -> SessionRecord | None:
        """The agent's open explicit session, else its open implicit one, else None."""
        found = self._open()
        explicit = [s for s in found if not s.implicit]
        chosen = explicit or found
        return max(chosen, key=lambda s: (s.started_at, s.id)) if chosen else None

    def current_id(self) -> str | None:
        record = self.current()
        return record.id if record is not None else None

    # -- startup ------------------------------------------------------------------------
    def recover(self) -> list[SessionRecord]:
        """End this agent's abandoned sessions (summarised by whoever ends them first)."""
        now = self._ctx.clock.now()
        ended: list[SessionRecord] = []
        for record in self._open():
            if now - record.last_activity_at > self.abandon_after:
                done = self._finish(record, "abandoned", now)
                if done is not None:
                    ended.append(done)
        return ended

    # -- explicit API -------------------------------------------------------------------
    def start(self, goal: str | None = None) -> SessionRecord:
        if goal is not None and (not isinstance(goal, str) or len(goal) > 2_000):
            raise ValidationError("goal must be a string of at most 2000 characters")
        ctx = self._ctx
        now = ctx.clock.now()
        record = SessionRecord(
            id=new_id(now), agent_id=ctx.identity.agent_id, tenant=ctx.identity.tenant,
            started_at=now, last_activity_at=now, goal=goal, implicit=False,
        )
        held = ctx.storage.open_session(record)
        self._changed()
        if held.id != record.id:
            raise StateConflict(
                f"session {held.id} is already active; end it before starting another")
        for implicit in self._open():  # an implicit session yields to the explicit one
            if implicit.implicit:
                self._finish(implicit, "ended", now)
        return record

    def end(self, reason: str = "ended", *, only: str | None = None) -> SessionRecord | None:
        """End the current session (explicit or implicit) and summarise it; with ``only``,
        that session if it is still open. None when there is nothing to end."""
        if only is not None:
            record = self._ctx.storage.get_session(only)
            if record is None or record.ended_at is not None:
                return None
        else:
            record = self.current()
            if record is None:
                return None
        return self._finish(record, reason, self._ctx.clock.now())

    # -- writes -------------------------------------------------------------------------
    def for_write(self) -> str:
        """The session id new entries carry: the current session, or the agent's implicit
        session opened now (the store admits one, whichever process asks first)."""
        current = self.current()
        if current is not None:
            return current.id
        ctx = self._ctx
        now = ctx.clock.now()
        opened = ctx.storage.open_session(SessionRecord(
            id=new_id(now), agent_id=ctx.identity.agent_id, tenant=ctx.identity.tenant,
            started_at=now, last_activity_at=now, implicit=True,
        ))
        self._changed()
        return opened.id

    def touch(self, session_id: str | None) -> None:
        """Note activity on ``session_id`` (at most once per ``ACTIVITY_RESOLUTION`` from
        this process; the store keeps the latest of all processes' notes)."""
        if session_id is None:
            return
        now = self._ctx.clock.now()
        last = self._noted.get(session_id)
        if last is not None and now - last < ACTIVITY_RESOLUTION:
            return
        if len(self._noted) > 1024:
            self._noted.clear()
        self._noted[session_id] = now
        self._ctx.storage.note_session_activity(session_id, now)

    # -- internals ----------------------------------------------------------------------
    def _finish(self, record: SessionRecord, reason: str, now: datetime
                ) -> SessionRecord | None:
        """End ``record`` in the store first (one process wins), then summarise it: the
        summary is written once, by the winner. A session another process ended already
        comes back as the store has it."""
        ended = self._ctx.storage.end_session(record.id, now, reason)
        self._changed()
        if ended is None:
            return self._ctx.storage.get_session(record.id)
        self._noted.pop(record.id, None)
        summary = summarise_session(self._ctx, self._llm, ended, self._write, now)
        if summary is not None:
            self._ctx.storage.set_session_summary(ended.id, summary.id)
            return attrs.evolve(ended, summary_id=summary.id)
        return ended


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
