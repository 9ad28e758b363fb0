"""The one write path of a Memory: every write (``store``, ``remember``, a session's
summary, a consolidation) joins a session and passes the write policy read at that
moment.

Why a service of its own: the facade, the session manager (its summaries), remembering
and consolidation all write through it, and none of them may hold the facade (a service
that reads the facade's fields depends on how the facade is built). A write joins the
session the caller names, else the agent's current one (opened implicitly when there is
none); a bulk import names no session (``session_id=None``). A read-only Memory refuses
every write here, before anything is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tulving.application.agent_memory.sessions import SessionManager
from tulving.application.writing.writer import Writer
from tulving.domain.errors import ReadOnlyError
from tulving.domain.write_policy import WritePolicy
from tulving.ports.storage import WriteOutcome


class _Current:
    """The marker for "the session this write belongs to": the agent's current one."""

    def __repr__(self) -> str:
        return "CURRENT_SESSION"


#: ``session_id=CURRENT_SESSION``: the agent's current session (an implicit one opened
#: when there is none).
CURRENT_SESSION: Any = _Current()


class SessionWrites:
    def __init__(self, writer: Writer, sessions: SessionManager,
                 policy: Callable[[], WritePolicy], *, read_only: bool,
                 location: str) -> None:
        self.writer = writer
        self.sessions = sessions
        #: The Memory's policy, read at each write (a caller may replace it).
        self.policy = policy
        self.read_only = read_only
        self.location = location

    def require_writable(self, operation: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{operation}: this Memory is open read-only "
                                f"({self.location}); open it without read_only to write")

    def write(self, batch: list[dict[str, Any]], operation: str, *,
              session_id: str | None = CURRENT_SESSION,
              defer_vectors: bool = False, enrich: Sequence[str] = ()) -> list[WriteOutcome]:
        """Write ``batch`` in one all-or-nothing transaction (``writing.writer``), in the
        session this write belongs to; ``defer_vectors``: embedded by the enrichment
        worker after the commit; ``enrich``: kinds queued for what it inserts
        (``Writer.write``)."""
        self.require_writable(operation)
        serial = self.writer.serial  # the session's own writes too (plumbing.write_order)
        if session_id is CURRENT_SESSION:
            with serial:
                session_id = self.sessions.for_write()
        outcomes = self.writer.write(batch, operation, session_id, self.policy(),
                                     defer_vectors=defer_vectors, enrich=enrich)
        with serial:
            self.sessions.touch(session_id)
        return outcomes

    def check(self, batch: list[dict[str, Any]]) -> list[str | None]:
        """Why each item would be refused (None: it would be written), writing nothing."""
        return self.writer.check(batch, self.policy())
